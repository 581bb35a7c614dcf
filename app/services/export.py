"""Exporting a project's finished items, split by a saved split definition, in four formats.

- `published`: the dataset's own release layout, from the last stage's workflow hooks
  (`export_record`, `export_files`, `export_log`, `published_layout`): ColorSwap
  `{split}.json` + `images/img_{id}_{1|2}.png`, WikiDO `{split}.jsonl` + the verification log,
  VisArgs `{split}/annotation.json` + its images;
- `jsonl`: `{split}.jsonl`, each line the published record with its provenance (annotators,
  revisions, timestamps, finals, suggestion outcomes);
- `parquet`: `data/{split}-00000-of-00001.parquet` with a Hugging Face `datasets` schema in
  the file metadata, images embedded as `Image` features;
- `coco`: `annotations/instances_{split}.json`, the boxes of workflows that have them (VisArgs).

Rows stream from a server-side cursor in batches (`BATCH` items), so memory stays flat in the
number of items; JSON documents are written element by element. Every file is written under
the output directory, then `manifest.json` (counts per split, the split definition and its
seed, schema version, sha256 and size of every file) is written last: a directory with a
manifest is complete. Nothing in the output depends on the time of the export, so exporting
twice gives byte-identical files. An `s3://bucket/prefix` target is written to a temporary
directory first and uploaded file by file.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.errors import DomainError, Invalid, NotFound
from app.models import Asset, Export, Project, SplitDefinition, Stage
from app.services.audit import record
from app.storage import Storage
from app.workflows import get_workflow
from app.workflows.base import Workflow

SCHEMA_VERSION = 1
FORMATS = ("published", "jsonl", "parquet", "coco")
BATCH = 500
PARQUET_ROWS = 5_000
PARQUET_BYTES = 64 << 20
ALL = "all"  # the one split of an export without a split definition

Progress = Callable[[int, int], None]


@dataclass
class Row:
    item_id: int
    external_id: str
    split: str
    data: dict[str, Any]
    assets: dict[str, str]
    results: dict[str, dict[str, Any]]
    provenance: dict[str, Any] | None = None


_RESULTS = """(SELECT jsonb_object_agg(st.workflow, r.payload ORDER BY r.id)
               FROM item_results r JOIN stages st ON st.id = r.stage_id WHERE r.item_id = i.id) AS results"""

_PROVENANCE = """,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'annotator', u.username, 'revision', a.revision,
                                         'at', a.created_at, 'seconds', a.seconds_spent) ORDER BY a.id)
       FROM annotations a JOIN stages st ON st.id = a.stage_id JOIN users u ON u.id = a.annotator_id
      WHERE a.item_id = i.id) AS annotations,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'source', r.source, 'by', u.username,
                                         'at', r.created_at, 'discard', r.discard) ORDER BY r.id)
       FROM item_results r JOIN stages st ON st.id = r.stage_id LEFT JOIN users u ON u.id = r.created_by
      WHERE r.item_id = i.id) AS finals,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'kind', o.kind, 'model', o.model, 'version', o.model_version,
                                         'annotator', u.username, 'outcome', o.outcome) ORDER BY o.id)
       FROM suggestion_outcomes o JOIN annotations a ON a.id = o.annotation_id JOIN stages st ON st.id = o.stage_id
       JOIN users u ON u.id = a.annotator_id
      WHERE a.item_id = i.id) AS suggestions"""


def _stream(session: Session, sql: str, params: dict[str, Any], split: str | None, provenance: bool) -> Iterator[list[Row]]:
    # A server-side cursor read BATCH rows at a time (yield_per here buffered every row: measured).
    conn = session.connection().execution_options(stream_results=True, max_row_buffer=BATCH)
    result = conn.execute(sa.text(sql), params)
    for part in result.partitions(BATCH):
        rows = []
        for r in part:
            m = r._mapping
            prov = None
            if provenance:
                prov = {"annotations": m["annotations"] or [], "finals": m["finals"] or [], "suggestions": m["suggestions"] or []}
            rows.append(Row(m["id"], m["external_id"], split or m["split"], m["data"], m["assets"] or {}, m["results"] or {}, prov))
        yield rows


def split_rows(session: Session, project_id: int, definition: SplitDefinition | None, split: str, *, provenance: bool = False) -> Iterator[list[Row]]:
    """Batches of the split's finished items in import order."""
    extra = _PROVENANCE if provenance else ""
    if definition is None:
        sql = f"""SELECT i.id, i.external_id, i.data, i.assets, {_RESULTS}{extra}
                  FROM items i WHERE i.project_id = :project AND i.status = 'done' ORDER BY i.id"""
        return _stream(session, sql, {"project": project_id}, split, provenance)
    sql = f"""SELECT i.id, i.external_id, i.data, i.assets, {_RESULTS}{extra}
              FROM item_splits s JOIN items i ON i.id = s.item_id
              WHERE s.definition_id = :definition AND s.split = :split ORDER BY s.item_id"""
    return _stream(session, sql, {"definition": definition.id, "split": split}, split, provenance)


def finished_rows(session: Session, project_id: int) -> Iterator[list[Row]]:
    """Every finished item, kept or discarded (the WikiDO verification log lists both)."""
    sql = f"""SELECT i.id, i.external_id, i.data, i.assets, {_RESULTS}
              FROM items i WHERE i.project_id = :project AND i.status IN ('done', 'discarded') ORDER BY i.id"""
    return _stream(session, sql, {"project": project_id}, ALL, False)


# -- output files -------------------------------------------------------------------------------------


class Output:
    """The files of one export under a local directory, each path checked to stay inside it."""

    def __init__(self, root: Path):
        self.root = root
        self.paths: list[str] = []

    def path(self, relative: str) -> Path:
        rel = PurePosixPath(relative)
        if rel.is_absolute() or any(p in ("", ".", "..") for p in rel.parts):
            raise Invalid(f"An export file name must stay inside the export: {relative!r}")
        target = self.root.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative not in self.paths:
            self.paths.append(relative)
        return target

    def write_bytes(self, relative: str, data: bytes) -> None:
        self.path(relative).write_bytes(data)

    def open_text(self, relative: str):
        return self.path(relative).open("w", encoding="utf-8", newline="\n")

    def digests(self) -> dict[str, dict[str, Any]]:
        out = {}
        for relative in sorted(self.paths):
            digest, size = hashlib.sha256(), 0
            with self.path(relative).open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
            out[relative] = {"sha256": digest.hexdigest(), "bytes": size}
        return out


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class JsonArray:
    """A JSON array written element by element: `[`, one element per line, `]`."""

    def __init__(self, fh):
        self.fh, self.first = fh, True
        fh.write("[")

    def add(self, value: Any) -> None:
        self.fh.write(("\n" if self.first else ",\n") + _dumps(value))
        self.first = False

    def close(self) -> None:
        self.fh.write("\n]\n" if not self.first else "]\n")


class JsonObject:
    """A JSON object written member by member."""

    def __init__(self, fh):
        self.fh, self.first = fh, True
        fh.write("{")

    def add(self, key: str, value: Any) -> None:
        self.fh.write(("\n" if self.first else ",\n") + _dumps(str(key)) + ": " + _dumps(value))
        self.first = False

    def close(self) -> None:
        self.fh.write("\n}\n" if not self.first else "}\n")


# -- images ----------------------------------------------------------------------------------------------


@dataclass
class Images:
    """Stored image bytes by sha256, looked up one batch at a time."""

    session: Session
    storage: Storage
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)

    def prefetch(self, shas: set[str]) -> None:
        missing = [s for s in shas if s not in self.keys]
        if missing:
            rows = self.session.execute(sa.select(Asset.sha256, Asset.storage_key, Asset.mime).where(Asset.sha256.in_(missing)))
            self.keys.update({sha: (key, mime) for sha, key, mime in rows})
        if len(self.keys) > 50_000:  # keep the lookup table bounded on huge projects
            self.keys = {s: self.keys[s] for s in shas if s in self.keys}

    def read(self, sha: str) -> tuple[bytes, str]:
        key, mime = self.keys[sha]
        return self.storage.get(key), mime

    def png(self, sha: str) -> bytes:
        """The image as PNG bytes (converted when stored in another format)."""
        data, mime = self.read(sha)
        if mime == "image/png":
            return data
        from PIL import Image

        with Image.open(io.BytesIO(data)) as image:
            out = io.BytesIO()
            image.save(out, format="PNG")
            return out.getvalue()


# -- formats -----------------------------------------------------------------------------------------------


@dataclass
class Context:
    session: Session
    project: Project
    workflow: Workflow
    definition: SplitDefinition | None
    splits: list[str]
    out: Output
    images: Images
    tick: Callable[[int], None]


def _write_published(ctx: Context) -> dict[str, int]:
    layout, wf, counts = ctx.workflow.published_layout, ctx.workflow, {}
    for split in ctx.splits:
        name = {"json": f"{split}.json", "jsonl": f"{split}.jsonl", "annotation.json": f"{split}/annotation.json"}[layout]
        prefix = f"{split}/" if layout == "annotation.json" else ""
        with ctx.out.open_text(name) as fh:
            doc = JsonArray(fh) if layout == "json" else JsonObject(fh) if layout == "annotation.json" else None
            n = 0
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                files = [(row, wf.export_files(row.data, row.assets, row.results)) for row in batch]
                ctx.images.prefetch({sha for _, f in files for sha in f.values()})
                for row, row_files in files:
                    record = wf.export_record(row.data, row.results)
                    if layout == "json":
                        doc.add(record)
                    elif layout == "annotation.json":
                        doc.add(row.external_id, record)
                    else:
                        fh.write(_dumps(record) + "\n")
                    for path, sha in sorted(row_files.items()):
                        ctx.out.write_bytes(prefix + path, ctx.images.png(sha) if path.lower().endswith(".png") else ctx.images.read(sha)[0])
                    n += 1
                ctx.tick(len(batch))
            if doc is not None:
                doc.close()
        counts[split] = n
    if wf.export_log_name:
        with ctx.out.open_text(wf.export_log_name) as fh:
            for batch in finished_rows(ctx.session, ctx.project.id):
                for row in batch:
                    line = wf.export_log(row.data, row.results)
                    if line is not None:
                        fh.write(_dumps(line) + "\n")
    return counts


def _write_jsonl(ctx: Context) -> dict[str, int]:
    counts = {}
    for split in ctx.splits:
        n = 0
        with ctx.out.open_text(f"{split}.jsonl") as fh:
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split, provenance=True):
                for row in batch:
                    line = {
                        "id": row.external_id,
                        "split": split,
                        "record": ctx.workflow.export_record(row.data, row.results),
                        "results": row.results,
                        "provenance": row.provenance,
                    }
                    fh.write(_dumps(line) + "\n")
                    n += 1
                ctx.tick(len(batch))
        counts[split] = n
    return counts


def _write_coco(ctx: Context) -> dict[str, int]:
    if not hasattr(ctx.workflow, "coco_boxes"):
        raise Invalid(f"COCO export needs boxes; the workflow {ctx.workflow.name} has none.")
    counts = {}
    for split in ctx.splits:
        n, annotation_id = 0, 0
        with tempfile.TemporaryFile("w+", encoding="utf-8") as images_part, tempfile.TemporaryFile("w+", encoding="utf-8") as boxes_part:
            images_doc, boxes_doc = JsonArray(images_part), JsonArray(boxes_part)
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                shas = {row.assets.get("/image") for row in batch} - {None}  # only their sizes are read
                found = ctx.session.execute(sa.select(Asset.sha256, Asset.width, Asset.height).where(Asset.sha256.in_(shas))) if shas else []
                dims = {sha: (w, h) for sha, w, h in found}
                for row in batch:
                    n += 1
                    record = ctx.workflow.export_record(row.data, row.results)
                    width, height = dims.get(row.assets.get("/image"), (None, None))
                    images_doc.add({"id": n, "file_name": record.get("url"), "width": width, "height": height, "vlcurate_id": row.external_id})
                    for box in ctx.workflow.coco_boxes(row.data, row.results):
                        annotation_id += 1
                        x, y, w, h = box["bbox"]
                        boxes_doc.add({"id": annotation_id, "image_id": n, "category_id": 1, "bbox": [x, y, w, h], "area": w * h,
                                       "iscrowd": 0, "attributes": box["attributes"]})
                ctx.tick(len(batch))
            images_doc.close()
            boxes_doc.close()
            with ctx.out.open_text(f"annotations/instances_{split}.json") as fh:
                info = {"description": f"{ctx.project.name} ({split})", "version": str(ctx.definition.version) if ctx.definition else "1"}
                fh.write('{"info": ' + _dumps(info) + ',\n"categories": ' + _dumps(ctx.workflow.coco_categories) + ',\n"images": ')
                images_part.seek(0)
                shutil.copyfileobj(images_part, fh)
                fh.write(',\n"annotations": ')
                boxes_part.seek(0)
                shutil.copyfileobj(boxes_part, fh)
                fh.write("}\n")
        counts[split] = n
    return counts


def _write_parquet(ctx: Context) -> dict[str, int]:
    from app.services import parquet

    counts, columns = {}, set(ctx.workflow.export_image_columns)
    for split in ctx.splits:
        with parquet.Writer(ctx.out.path(f"data/{split}-00000-of-00001.parquet")) as writer:
            n, pending, pending_bytes = 0, [], 0
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                pictures = [ctx.workflow.export_images(row.data, row.assets, row.results) for row in batch]
                ctx.images.prefetch({sha for p in pictures for sha in p.values() if sha})
                for row, picture in zip(batch, pictures, strict=True):
                    record = ctx.workflow.export_record(row.data, row.results)
                    for column, sha in picture.items():
                        path = record.get(column) if isinstance(record.get(column), str) else None
                        data = ctx.images.read(sha)[0] if sha else None
                        record[column] = {"bytes": data, "path": path} if data is not None else None
                        pending_bytes += len(data or b"")
                    pending.append(record)
                # Row groups of up to PARQUET_ROWS records or PARQUET_BYTES of images, whichever comes first.
                if len(pending) >= PARQUET_ROWS or pending_bytes >= PARQUET_BYTES:
                    writer.write(pending, image_columns=columns)
                    pending, pending_bytes = [], 0
                n += len(batch)
                ctx.tick(len(batch))
            writer.write(pending, image_columns=columns)
        counts[split] = n
    return counts


WRITERS = {"published": _write_published, "jsonl": _write_jsonl, "parquet": _write_parquet, "coco": _write_coco}


def _project_workflow(session: Session, project_id: int) -> Workflow:
    last = session.scalar(sa.select(Stage.workflow).where(Stage.project_id == project_id).order_by(Stage.position.desc()).limit(1))
    return get_workflow(last)


def count_items(session: Session, project_id: int, definition: SplitDefinition | None) -> int:
    if definition is not None:
        return sum(definition.counts.values())
    return session.scalar(sa.text("SELECT count(*) FROM items WHERE project_id = :p AND status = 'done'"), {"p": project_id})


def export_project(
    session: Session,
    project_id: int,
    fmt: str,
    root: Path,
    storage: Storage,
    *,
    definition: SplitDefinition | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the export under `root` and return its manifest (also written as manifest.json)."""
    if fmt not in WRITERS:
        raise Invalid(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    project = session.get(Project, project_id)
    workflow = _project_workflow(session, project_id)
    splits = definition.order if definition is not None else [ALL]
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").unlink(missing_ok=True)  # a manifest marks a complete export
    total, done = count_items(session, project_id, definition), 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    out = Output(root)
    ctx = Context(session, project, workflow, definition, splits, out, Images(session, storage), tick)
    counts = WRITERS[fmt](ctx)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "project": project.name,
        "workflow": workflow.name,
        "format": fmt,
        "splits": counts,
        "split_order": splits,
        "split_definition": (
            {"version": definition.version, "config": definition.config, "seed": definition.config.get("seed", 0)}
            if definition is not None else None
        ),
        "files": out.digests(),
    }
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def upload(root: Path, target: str, settings) -> None:
    """Copy a finished export directory to `s3://bucket/prefix`, the manifest last."""
    import boto3

    bucket, _, prefix = target.removeprefix("s3://").partition("/")
    client = boto3.client("s3", endpoint_url=settings.s3_endpoint_url, region_name=settings.s3_region)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.name == "manifest.json")
    for path in files:
        key = "/".join(filter(None, [prefix.strip("/"), path.relative_to(root).as_posix()]))
        client.upload_file(str(path), bucket, key)


def export_to(
    session: Session,
    project_id: int,
    fmt: str,
    target: str,
    storage: Storage,
    settings,
    *,
    definition: SplitDefinition | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Export to a local directory or an `s3://bucket/prefix` target."""
    if target.startswith("s3://"):
        if not target.removeprefix("s3://").split("/")[0]:
            raise Invalid("An S3 target names its bucket: s3://bucket/prefix.")
        with tempfile.TemporaryDirectory(prefix="vlcurate-export-") as tmp:
            manifest = export_project(session, project_id, fmt, Path(tmp), storage, definition=definition, progress=progress)
            upload(Path(tmp), target, settings)
            return manifest
    return export_project(session, project_id, fmt, Path(target), storage, definition=definition, progress=progress)


# -- export runs (the worker job, the CLI and the admin page) -------------------------------------------------


def local_dir(settings, export_id: int) -> Path:
    """Where an export made from the web lands when it has no S3 target."""
    return Path(settings.data_dir) / "exports" / str(export_id)


def create_export(
    session: Session,
    project_id: int,
    fmt: str,
    *,
    settings,
    version: int | None = None,
    use_splits: bool = True,
    target: str | None = None,
    actor_id: int | None = None,
) -> Export:
    """Record an export to run: the split version (newest by default; none: one split "all"),
    the format, and the target (an `s3://` prefix, a local directory, or the data directory)."""
    from app.services import splits

    if fmt not in WRITERS:
        raise Invalid(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.")
    project = session.get(Project, project_id)
    if project is None:
        raise NotFound(f"No project with id {project_id}.")
    definition = None
    if use_splits:
        has_any = session.scalar(sa.select(sa.func.count()).select_from(SplitDefinition).where(SplitDefinition.project_id == project_id))
        if has_any or version is not None:
            definition = splits.get_definition(session, project_id, version)
    if fmt == "coco" and not hasattr(_project_workflow(session, project_id), "coco_boxes"):
        raise Invalid("COCO export needs boxes: only VisArgs projects have them.")
    if target and target.startswith("s3://") and not target.removeprefix("s3://").split("/")[0]:
        raise Invalid("An S3 target names its bucket: s3://bucket/prefix.")
    row = Export(project_id=project_id, definition_id=definition.id if definition else None, format=fmt, target=target or "", created_by=actor_id)
    session.add(row)
    session.flush()
    if not row.target:
        row.target = str(local_dir(settings, row.id))
    record(session, "export.create", actor_id=actor_id, target=f"project:{project_id}", export=row.id, format=fmt,
           version=definition.version if definition else None)
    return row


def run_export(sessions, storage: Storage, settings, export_id: int, progress: Progress | None = None) -> dict[str, Any]:
    """Run a recorded export: stream the items in one consistent snapshot, write, upload, and
    keep the export row's status and progress current for the admin page."""
    with sessions.begin() as s:
        row = s.get(Export, export_id)
        if row is None:
            raise NotFound(f"No export with id {export_id}.")
        row.status, row.error, row.done = "running", None, 0
        project_id, fmt, target, definition_id = row.project_id, row.format, row.target, row.definition_id
    last = [0.0]

    def report(done: int, total: int) -> None:
        if progress:
            progress(done, total)
        now = time.monotonic()
        if now - last[0] >= 1 or done == total:
            last[0] = now
            with sessions.begin() as t:
                t.execute(sa.update(Export).where(Export.id == export_id).values(done=done, total=total))

    try:
        with sessions() as s:
            s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            definition = s.get(SplitDefinition, definition_id) if definition_id else None
            manifest = export_to(s, project_id, fmt, target, storage, settings, definition=definition, progress=report)
            s.rollback()  # read only
    except BaseException as exc:  # an interrupted CLI export is marked failed too
        message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}".rstrip(": ")
        with sessions.begin() as s:
            s.execute(sa.update(Export).where(Export.id == export_id).values(status="failed", error=message[:2000], finished_at=sa.func.now()))
        raise
    with sessions.begin() as s:
        total = sum(manifest["splits"].values())
        s.execute(
            sa.update(Export).where(Export.id == export_id)
            .values(status="done", manifest=manifest, done=total, total=total, finished_at=sa.func.now())
        )
    return manifest


def find_file(session: Session, export_id: int, relative: str) -> Path:
    """A file of a finished local export by its id and path (only paths its manifest lists)."""
    row = session.get(Export, export_id)
    if row is None:
        raise NotFound(f"No export with id {export_id}.")
    return file_path(row, relative)


def file_path(row: Export, relative: str) -> Path:
    """A file of a finished local export, only if its manifest lists it."""
    if row.status != "done" or not row.manifest or relative not in row.manifest["files"] and relative != "manifest.json":
        raise NotFound("No such file in this export.")
    if row.target.startswith("s3://"):
        raise NotFound(f"This export was written to {row.target}; download it from there.")
    return Path(row.target) / PurePosixPath(relative)


def exports_of(session: Session, project_id: int, limit: int = 50) -> list[Export]:
    return list(session.scalars(sa.select(Export).where(Export.project_id == project_id).order_by(Export.id.desc()).limit(limit)))


class _Chunks(io.RawIOBase):
    """A write-only stream that hands out what was written so far (zipfile writes to it)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def drain(self) -> Iterator[bytes]:
        parts, self.parts = self.parts, []
        yield from parts


def zip_stream(root: Path, paths: list[str], chunk: int = 1 << 20) -> Iterator[bytes]:
    """The export's files as one zip, produced while it is sent: nothing is held in memory or
    written to disk beyond a chunk (stored, not recompressed: images and Parquet are already)."""
    sink = _Chunks()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for relative in paths:
            info = zipfile.ZipInfo(relative, date_time=(1980, 1, 1, 0, 0, 0))  # no clock: same bytes each time
            with archive.open(info, "w", force_zip64=True) as dst, (root / PurePosixPath(relative)).open("rb") as src:
                while data := src.read(chunk):
                    dst.write(data)
                    yield from sink.drain()
        yield from sink.drain()
    yield from sink.drain()
