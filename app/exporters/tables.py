"""Rows of plain values (dicts with the same keys) streamed as CSV or Parquet chunks of bytes: an HTTP
response sends each chunk as it is made, so memory holds one batch of rows, never the whole table."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

BATCH = 5000  # rows a CSV chunk or a Parquet row group


def _batches(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    it = iter(rows)
    while batch := list(islice(it, size)):
        yield batch


def csv_chunks(columns: list[str], rows: Iterable[dict[str, Any]], batch: int = BATCH) -> Iterator[bytes]:
    """A header line, then the rows (None as an empty field), a chunk of UTF-8 bytes per `batch` rows."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    yield out.getvalue().encode()
    for chunk in _batches(rows, batch):
        out.seek(0)
        out.truncate()
        writer.writerows(chunk)
        yield out.getvalue().encode()


class _Sink(io.RawIOBase):
    """A write-only file that keeps what was written until it is taken."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def parquet_chunks(schema: pa.Schema, rows: Iterable[dict[str, Any]], batch: int = BATCH) -> Iterator[bytes]:
    """A Parquet file of `schema`'s columns, a row group per `batch` rows, its bytes given out as each
    row group is written (the footer last)."""
    sink = _Sink()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for chunk in _batches(rows, batch):
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
            yield sink.take()
    yield sink.take()
