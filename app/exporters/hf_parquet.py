"""Parquet files that `datasets.load_dataset("parquet", ...)` loads with the right features.

Rows are written in row groups as they stream in. The Arrow schema comes from the first batch
(columns that are empty there become strings) and every later batch must fit it. Image columns
are structs {bytes, path}, the layout of the Hugging Face `Image` feature; the feature
description `datasets` reads is stored in the file's schema metadata under "huggingface",
derived from the Arrow schema here (hand-written because `datasets` is a multi-hundred-MB
dependency we only need in tests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from app.errors import Invalid

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])

_VALUES = {
    pa.string(): "string",
    pa.large_string(): "large_string",
    pa.int64(): "int64",
    pa.int32(): "int32",
    pa.float64(): "float64",
    pa.bool_(): "bool",
    pa.binary(): "binary",
    pa.null(): "null",
}


def feature(t: pa.DataType) -> Any:
    """The `datasets` feature description of an Arrow type."""
    if t in _VALUES:
        return {"dtype": _VALUES[t], "_type": "Value"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"feature": feature(t.value_type), "_type": "List"}
    if pa.types.is_struct(t):
        return {t.field(i).name: feature(t.field(i).type) for i in range(t.num_fields)}
    raise Invalid(f"The Parquet export cannot describe the column type {t}.")


def _widen(t: pa.DataType) -> pa.DataType:
    """Types a first batch cannot tell (all empty) become strings."""
    if pa.types.is_null(t):
        return pa.string()
    if pa.types.is_list(t):
        return pa.list_(_widen(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, _widen(t.field(i).type)) for i in range(t.num_fields)])
    return t


class Writer:
    def __init__(self, path: Path):
        self.path = path
        self.schema: pa.Schema | None = None
        self.writer: pq.ParquetWriter | None = None
        self.images: set[str] = set()

    def __enter__(self) -> "Writer":
        return self

    def _open(self, records: list[dict[str, Any]], image_columns: set[str]) -> None:
        columns = list(dict.fromkeys(k for r in records for k in r))
        columns += [c for c in sorted(image_columns) if c not in columns]
        plain = [c for c in columns if c not in image_columns]
        inferred = pa.Table.from_pylist([{c: r.get(c) for c in plain} for r in records]).schema if plain else pa.schema([])
        fields = []
        for c in columns:
            fields.append(pa.field(c, IMAGE) if c in image_columns else pa.field(c, _widen(inferred.field(c).type)))
        features = {f.name: ({"_type": "Image"} if f.name in image_columns else feature(f.type)) for f in fields}
        # In column order: `datasets` takes the column order from these features.
        metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
        self.schema = pa.schema(fields, metadata=metadata)
        self.images = image_columns
        self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")

    def write(self, records: list[dict[str, Any]], *, image_columns: set[str]) -> None:
        if not records:
            return
        if self.writer is None:
            self._open(records, image_columns)
        try:
            table = pa.Table.from_pylist(records, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise Invalid(f"A record does not fit the Parquet schema taken from the first records: {exc}") from None
        self.writer.write_table(table)

    def __exit__(self, *exc) -> None:
        if self.writer is None:  # no rows: still a valid, empty file
            self.schema = pa.schema([])
            self.writer = pq.ParquetWriter(self.path, self.schema)
        self.writer.close()
