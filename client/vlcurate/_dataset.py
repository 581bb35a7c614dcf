"""Finals as a `datasets.Dataset`: the records as the published export writes them, one column per
key, and each top-level image field an `Image` feature holding the stored image's bytes (its `path`
is the record's own value: the file name or URL the record gives)."""

from __future__ import annotations

import json
import threading
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlcurate.models import ProjectSettings

if TYPE_CHECKING:
    import datasets
    from pydantic import BaseModel

MAP_BATCH = 100  # rows a call when the images go in (a batch of large images is held in memory)
OPEN_PAGES = 4  # image pages kept open while the Dataset is built (records name them in order)


def image_page(folder: Path, number: int) -> Path:
    """Where page `number` of the finals' images is downloaded (a zip naming each by its sha256)."""
    return folder / f"images-{number:06d}.zip"


def preload() -> None:
    """Import `datasets` in a thread while the finals download: its import takes about 1.5 s."""

    def load() -> None:
        try:
            import datasets  # noqa: F401
        except ImportError:  # build() says what to install
            pass

    threading.Thread(target=load, name="vlcurate-import-datasets", daemon=True).start()


class ImagePages:
    """The downloaded images, read by sha256 from their pages' zips, a few pages open at a time."""

    def __init__(self, folder: Path, pages: dict[str, int]):
        self.folder, self.pages = folder, pages
        self.open: OrderedDict[int, zipfile.ZipFile] = OrderedDict()

    def read(self, sha: str) -> bytes:
        number = self.pages[sha]
        archive = self.open.pop(number, None) or zipfile.ZipFile(image_page(self.folder, number))
        self.open[number] = archive  # most recently used last
        while len(self.open) > OPEN_PAGES:
            self.open.popitem(last=False)[1].close()
        return archive.read(sha)

    def close(self) -> None:
        for archive in self.open.values():
            archive.close()
        self.open.clear()


def build(folder: Path, settings: ProjectSettings, keys: list[str], pages: dict[str, int],
          cache_dir: str | None = None) -> datasets.Dataset:
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
    images = ImagePages(folder, pages)

    def with_bytes(rows: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for column in image_columns:
            rows[column] = [{"bytes": images.read(v["sha256"]) if v and v.get("sha256") else None, "path": (v or {}).get("path")}
                            for v in rows[column]]
        return rows

    try:
        # Batched: a call a row cost more than reading the image. The fingerprint is given: hashing
        # `with_bytes` would hash every image's page number.
        return loaded.map(with_bytes, batched=True, batch_size=MAP_BATCH, features=features, desc="images",
                          new_fingerprint=f"vlcurate-{folder.name}")
    finally:
        images.close()


def annotation_table(path: Path, cache_dir: str | None = None) -> datasets.Dataset:
    """A Dataset of the annotation rows in the JSON lines at `path` (`AnnotationRow`), written to Arrow
    in batches. Payloads become a struct column; where the stages' answers cannot share one (a field
    that is text in one and a list in another), each payload is kept as its JSON text instead."""
    import datasets

    from vlcurate.models import AnnotationRow

    if path.stat().st_size == 0:
        return datasets.Dataset.from_dict({name: [] for name in AnnotationRow.model_fields})
    try:
        return datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=cache_dir)
    except (datasets.exceptions.DatasetGenerationError, TypeError, ValueError):
        text = path.with_name("annotations-text.jsonl")
        with path.open(encoding="utf-8") as src, text.open("w", encoding="utf-8") as out:
            for line in src:
                row = json.loads(line)
                row["payload"] = json.dumps(row["payload"], ensure_ascii=False, sort_keys=True)
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return datasets.load_dataset("json", data_files=str(text), split="train", cache_dir=cache_dir)


def rows_table(rows: list[dict[str, Any]], model: type[BaseModel]) -> datasets.Dataset:
    """A Dataset of plain rows, its columns the pydantic `model`'s fields (an empty one keeps them)."""
    import datasets

    if not rows:
        return datasets.Dataset.from_dict({name: [] for name in model.model_fields})
    return datasets.Dataset.from_list(rows)
