"""`published`: the dataset's own release, from its export hooks (`export_record`, `export_files`,
`export_log`) at `published_path` in `published_layout` and `release_style`: ColorSwap
`{split}.json` + `images/img_{id}_{1|2}.png`, WikiDO `{split}.jsonl` + the verification log,
VisArgs `{split}/annotation.json` + its images. A record imported and accepted unchanged is
written as `json.dump` wrote it in the release, so a release comes back byte for byte."""

from __future__ import annotations

from pathlib import PurePosixPath

from app.datasets.dataset import JsonStyle
from app.exporters.base import Context, Format
from app.exporters.files import JsonArray
from app.exporters.rows import finished_rows, split_rows


def write(ctx: Context) -> dict[str, int]:
    dataset, counts = ctx.dataset, {}
    style = dataset.release_style
    for split in ctx.splits:
        path = dataset.published_path.format(split=split)
        folder = PurePosixPath(path).parent
        prefix = "" if str(folder) == "." else f"{folder}/"
        with ctx.out.open_text(path) as fh:
            doc = JsonArray(fh, style) if dataset.published_layout == "json" else None
            n = 0
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                files = [(row, dataset.export_files(row.data, row.assets, row.results, row.source)) for row in batch]
                ctx.images.prefetch({sha for _, f in files for sha in f.values()})
                for row, row_files in files:
                    record = dataset.export_record(row.data, row.results, row.source)
                    if doc is not None:
                        doc.add(record)
                    else:
                        fh.write(style.dumps(record) + "\n")
                    for name, sha in sorted(row_files.items()):
                        ctx.out.write_bytes(prefix + name, ctx.images.png(sha) if name.lower().endswith(".png") else ctx.images.read(sha)[0])
                    n += 1
                ctx.tick(len(batch))
            if doc is not None:
                doc.close()
        counts[split] = n
    if dataset.export_log_name:
        # A log is JSON Lines whatever the records' layout: one compact line per entry.
        line_style = JsonStyle(indent=None, ensure_ascii=style.ensure_ascii)
        with ctx.out.open_text(dataset.export_log_name) as fh:
            for batch in finished_rows(ctx.session, ctx.project.id):
                for row in batch:
                    line = dataset.export_log(row.data, row.results, row.source)
                    if line is not None:
                        fh.write(line_style.dumps(line) + "\n")
    return counts


FORMAT = Format("published", "the dataset's own release layout and files", write)
