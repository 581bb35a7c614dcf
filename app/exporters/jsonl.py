"""`jsonl`: `{split}.jsonl`, each line the published record with its provenance (annotators,
revisions, timestamps, finals, suggestion outcomes)."""

from __future__ import annotations

from app.exporters.base import Context, Format
from app.exporters.files import dumps
from app.exporters.rows import split_rows


def write(ctx: Context) -> dict[str, int]:
    counts = {}
    for split in ctx.splits:
        n = 0
        with ctx.out.open_text(f"{split}.jsonl") as fh:
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split, provenance=True):
                for row in batch:
                    line = {
                        "id": row.external_id,
                        "split": split,
                        "record": ctx.dataset.export_record(row.data, row.results, row.source),
                        "results": row.results,
                        "provenance": row.provenance,
                    }
                    fh.write(dumps(line) + "\n")
                    n += 1
                ctx.tick(len(batch))
        counts[split] = n
    return counts


FORMAT = Format("jsonl", "one JSON line per item: the published record with its provenance", write)
