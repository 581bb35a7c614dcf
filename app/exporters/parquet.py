"""`parquet`: `data/{split}-00000-of-00001.parquet` with a Hugging Face `datasets` schema in the
file metadata, images embedded as `Image` features (`hf_parquet` writes the files)."""

from __future__ import annotations

from app.exporters import hf_parquet
from app.exporters.base import Context, Format
from app.exporters.rows import split_rows

PARQUET_ROWS = 5_000
PARQUET_BYTES = 64 << 20


def write(ctx: Context) -> dict[str, int]:
    counts, columns, order = {}, set(ctx.dataset.export_image_columns), ctx.dataset.parquet_columns
    for split in ctx.splits:
        with hf_parquet.Writer(ctx.out.path(f"data/{split}-00000-of-00001.parquet")) as writer:
            n, pending, pending_bytes = 0, [], 0
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                pictures = [ctx.dataset.export_images(row.data, row.assets, row.results, row.source) for row in batch]
                ctx.images.prefetch({sha for p in pictures for sha in p.values() if sha})
                for row, picture in zip(batch, pictures, strict=True):
                    record = ctx.dataset.export_record(row.data, row.results, row.source)
                    for column, sha in picture.items():
                        path = record.get(column) if isinstance(record.get(column), str) else None
                        data = ctx.images.read(sha)[0] if sha else None
                        record[column] = {"bytes": data, "path": path} if data is not None else None
                        pending_bytes += len(data or b"")
                    pending.append(_card_order(record, order))
                # Row groups of up to PARQUET_ROWS records or PARQUET_BYTES of images, whichever comes first.
                if len(pending) >= PARQUET_ROWS or pending_bytes >= PARQUET_BYTES:
                    writer.write(pending, image_columns=columns)
                    pending, pending_bytes = [], 0
                n += len(batch)
                ctx.tick(len(batch))
            writer.write(pending, image_columns=columns)
        counts[split] = n
    return counts


def _card_order(record: dict, order: tuple[str, ...]) -> dict:
    """The record's columns in the dataset card's order, then the others as they come."""
    if not order:
        return record
    return {**{k: record[k] for k in order if k in record}, **{k: v for k, v in record.items() if k not in order}}


FORMAT = Format("parquet", "Parquet that Hugging Face `datasets` loads, images embedded", write)
