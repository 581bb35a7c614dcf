"""`published`: the dataset's own release layout, from its export hooks (`export_record`,
`export_files`, `export_log`, `published_layout`): ColorSwap `{split}.json` +
`images/img_{id}_{1|2}.png`, WikiDO `{split}.jsonl` + the verification log, VisArgs
`{split}/annotation.json` + its images."""

from __future__ import annotations

from app.exporters.base import Context, Format
from app.exporters.files import JsonArray, JsonObject, dumps
from app.exporters.rows import finished_rows, split_rows

_NAMES = {"json": "{split}.json", "jsonl": "{split}.jsonl", "annotation.json": "{split}/annotation.json"}


def write(ctx: Context) -> dict[str, int]:
    layout, dataset, counts = ctx.dataset.published_layout, ctx.dataset, {}
    for split in ctx.splits:
        prefix = f"{split}/" if layout == "annotation.json" else ""
        with ctx.out.open_text(_NAMES[layout].format(split=split)) as fh:
            doc = JsonArray(fh) if layout == "json" else JsonObject(fh) if layout == "annotation.json" else None
            n = 0
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                files = [(row, dataset.export_files(row.data, row.assets, row.results)) for row in batch]
                ctx.images.prefetch({sha for _, f in files for sha in f.values()})
                for row, row_files in files:
                    record = dataset.export_record(row.data, row.results)
                    if layout == "json":
                        doc.add(record)
                    elif layout == "annotation.json":
                        doc.add(row.external_id, record)
                    else:
                        fh.write(dumps(record) + "\n")
                    for path, sha in sorted(row_files.items()):
                        ctx.out.write_bytes(prefix + path, ctx.images.png(sha) if path.lower().endswith(".png") else ctx.images.read(sha)[0])
                    n += 1
                ctx.tick(len(batch))
            if doc is not None:
                doc.close()
        counts[split] = n
    if dataset.export_log_name:
        with ctx.out.open_text(dataset.export_log_name) as fh:
            for batch in finished_rows(ctx.session, ctx.project.id):
                for row in batch:
                    line = dataset.export_log(row.data, row.results)
                    if line is not None:
                        fh.write(dumps(line) + "\n")
    return counts


FORMAT = Format("published", "the dataset's own release layout and files", write)
