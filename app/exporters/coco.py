"""`coco`: `annotations/instances_{split}.json`, the boxes of datasets that declare them (VisArgs).
The images and boxes arrays are spooled to temporary files, so memory stays flat."""

from __future__ import annotations

import shutil
import tempfile

import sqlalchemy as sa

from app.errors import Invalid
from app.exporters.base import Context, Format
from app.exporters.files import LineArray, dumps
from app.exporters.rows import split_rows
from app.models import Asset


def write(ctx: Context) -> dict[str, int]:
    boxes = ctx.dataset.boxes
    if boxes is None:
        raise Invalid(f"COCO export needs boxes; the dataset {ctx.dataset.name} has none.")
    counts = {}
    for split in ctx.splits:
        n, annotation_id = 0, 0
        with tempfile.TemporaryFile("w+", encoding="utf-8") as images_part, tempfile.TemporaryFile("w+", encoding="utf-8") as boxes_part:
            images_doc, boxes_doc = LineArray(images_part), LineArray(boxes_part)
            for batch in split_rows(ctx.session, ctx.project.id, ctx.definition, split):
                shas = {row.assets.get("/image") for row in batch} - {None}  # only their sizes are read
                found = ctx.session.execute(sa.select(Asset.sha256, Asset.width, Asset.height).where(Asset.sha256.in_(shas))) if shas else []
                dims = {sha: (w, h) for sha, w, h in found}
                for row in batch:
                    n += 1
                    width, height = dims.get(row.assets.get("/image"), (None, None))
                    images_doc.add({"id": n, "file_name": boxes.file_name(row.data, row.source), "width": width, "height": height,
                                    "vlcurate_id": row.external_id})
                    for box in boxes.boxes(row.data, row.results, row.source):
                        annotation_id += 1
                        x, y, w, h = box["bbox"]
                        boxes_doc.add({"id": annotation_id, "image_id": n, "category_id": 1, "bbox": [x, y, w, h], "area": w * h,
                                       "iscrowd": 0, "attributes": box["attributes"]})
                ctx.tick(len(batch))
            images_doc.close()
            boxes_doc.close()
            with ctx.out.open_text(f"annotations/instances_{split}.json") as fh:
                info = {"description": f"{ctx.project.name} ({split})", "version": str(ctx.definition.version) if ctx.definition else "1"}
                fh.write('{"info": ' + dumps(info) + ',\n"categories": ' + dumps(boxes.categories) + ',\n"images": ')
                images_part.seek(0)
                shutil.copyfileobj(images_part, fh)
                fh.write(',\n"annotations": ')
                boxes_part.seek(0)
                shutil.copyfileobj(boxes_part, fh)
                fh.write("}\n")
        counts[split] = n
    return counts


FORMAT = Format("coco", "COCO instances with one box per annotated region", write, supports=lambda dataset: dataset.boxes is not None)
