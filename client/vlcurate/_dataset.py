"""Finals as a `datasets.Dataset`: the records as the published export writes them, one column per
key, and each top-level image field an `Image` feature holding the stored image's bytes (its `path`
is the record's own value: the file name or URL the record gives)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vlcurate.models import ProjectSettings


def build(folder: Path, settings: ProjectSettings, keys: list[str], cache_dir: str | None = None):
    """A Dataset from the finals `_download_finals` wrote under `folder`, written to Arrow in
    batches (memory stays flat in the number of records)."""
    import datasets

    image_columns = [p.strip("/") for p in settings.image_fields if p.count("/") == 1 and p.strip("/") in keys]
    plain = folder / "plain.jsonl"
    with (folder / "finals.jsonl").open(encoding="utf-8") as src, plain.open("w", encoding="utf-8") as out:
        for line in src:
            final = json.loads(line)
            record = {k: final["record"].get(k) for k in keys}
            for column in image_columns:
                # The image's sha256 for now; its bytes go in below.
                record[column] = {"path": record[column], "sha256": final["images"].get("/" + column)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if not keys:
        return datasets.Dataset.from_dict({})
    loaded = datasets.load_dataset("json", data_files=str(plain), split="train", cache_dir=cache_dir)
    if not image_columns:
        return loaded
    features = loaded.features.copy()
    for column in image_columns:
        features[column] = datasets.Image(decode=True)

    def with_bytes(row: dict[str, Any]) -> dict[str, Any]:
        for column in image_columns:
            value = row[column] or {}
            sha = value.get("sha256")
            row[column] = {"bytes": (folder / sha).read_bytes() if sha else None, "path": value.get("path")}
        return row

    return loaded.map(with_bytes, features=features, desc="images")
