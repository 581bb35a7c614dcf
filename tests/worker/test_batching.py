"""The image models batched across items: the scores of item-by-item, the precision paths within
1e-2 of fp32, and an unreadable image that fails only its item (on the tiny CLIP, through the real
loading path, and on the real queue's job for the stored rows)."""

from __future__ import annotations

import io

import pytest
import sqlalchemy as sa
import torch
from PIL import Image

from app.datasets import get_workflow
from app.datasets.colorswap.producers import colorswap_itm
from app.datasets.suggest import Failed, ItemInput, Produced
from app.datasets.visargs.demo import draw_poster
from app.datasets.visargs.producers import visargs_boxes, visargs_regions
from app.datasets.wikido.producers import wikido_itm
from app.db import transaction
from app.models import Asset, Item, Suggestion
from app.worker import backends, runtime, suggest_batch
from tests.conftest import colorswap_records, damage_stored
from tests.worker.test_jobs import _import


def _png(colour, size=(40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def _reference(model_dir, images: list[bytes], texts: list[str]) -> list[list[float]]:
    """Cosines computed the plain way, one image and one text at a time, with the model's own
    processor doing all the preprocessing: what batching across items must reproduce."""
    from transformers import AutoModel, AutoProcessor

    model = AutoModel.from_pretrained(model_dir).eval()
    processor = AutoProcessor.from_pretrained(model_dir)

    def unit(out):
        out = out if isinstance(out, torch.Tensor) else out.pooler_output
        return torch.nn.functional.normalize(out, dim=-1)[0]

    with torch.no_grad():
        img = [unit(model.get_image_features(**processor(images=[backends.open_image(b)], return_tensors="pt"))) for b in images]
        txt = [unit(model.get_text_features(**processor(text=[t], return_tensors="pt"))) for t in texts]
    return [[float(i @ t) for t in txt] for i in img]


def _flat(rows: list[list[float]]) -> list[float]:
    return [x for row in rows for x in row]


def _pairs(n: int) -> list[ItemInput]:
    colours = ["red", "blue", "green", "yellow", "purple", "orange", "grey", "white"]
    return [
        ItemInput(10 + i, {"id": f"p{i}", "caption_1": f"a red cat {i}", "caption_2": f"a grey cat {i}", "candidates": [{}] * 4},
                  {f"/candidates/{k}/image": _png(colours[(i + k) % 8], (40 + i, 30 + k)) for k in range(4)}, {})
        for i in range(n)
    ]


def test_colorswap_scores_batched_across_items_are_those_of_each_item_alone(settings, tiny_clip):
    items = _pairs(3)
    # Five images per forward pass: batches straddle items (4 candidates each).
    across = colorswap_itm(items, settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_image_batch": 5}), backends)
    alone = [colorswap_itm([item], settings.model_copy(update={"clip_model_dir": tiny_clip}), backends)[0] for item in items]
    assert [p.item_id for p in across] == [10, 11, 12]
    for batched, single, item in zip(across, alone, items, strict=True):
        expected = _reference(tiny_clip, list(item.images.values()), [item.data["caption_1"], item.data["caption_2"]])
        assert _flat(batched.payload["scores"]) == pytest.approx(_flat(expected), abs=2e-5)
        assert _flat(batched.payload["scores"]) == pytest.approx(_flat(single.payload["scores"]), abs=2e-5)
        assert batched.score == pytest.approx(single.score, abs=1e-5)


def test_wikido_fit_and_visargs_windows_batched_across_items(settings, tiny_clip):
    cfg = settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_image_batch": 3})
    # Two items share a caption: it is embedded once, and both still get their own image's fit.
    captions = ["a stone church", "a red bridge", "a stone church", "a market square"]
    items = [ItemInput(i, {"caption": c}, {"/image": _png(("red", "blue", "green", "white")[i], (50, 40 + i))}, {}) for i, c in enumerate(captions)]
    fits = wikido_itm(items, cfg, backends)
    for item, fit in zip(items, fits, strict=True):
        (expected,) = _reference(tiny_clip, [item.images["/image"]], [item.data["caption"]])[0]
        assert fit.item_id == item.id and fit.payload["score"] == pytest.approx(expected, abs=2e-5)

    posters = [
        ItemInput(20 + i, {"id": str(i)}, {"/image": draw_poster("SAVE WATER", "circle", (40, 80, 220), i)},
                  {"visargs.premises": {"visual_premises": ["The words SAVE WATER", f"A blue circle {i}"]}})
        for i in range(2)
    ]
    together = visargs_regions(posters, cfg, backends)
    apart = [visargs_regions([p], settings.model_copy(update={"clip_model_dir": tiny_clip}), backends)[0] for p in posters]
    assert [p.payload for p in together] == [p.payload for p in apart]
    assert [get_workflow("visargs.grounding").check_suggestion("visargs.regions", p.payload) for p in together] == [[], []]


def test_bf16_and_fp16_scores_are_within_1e_2_of_fp32(settings, tiny_clip):
    items = _pairs(2)
    scores = {}
    for precision in ("fp32", "bf16", "fp16"):
        cfg = settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_precision": precision})
        assert backends.image_text_for(cfg).precision == precision
        scores[precision] = [s for p in colorswap_itm(items, cfg, backends) for s in _flat(p.payload["scores"])]
    for precision in ("bf16", "fp16"):
        gaps = [abs(a - b) for a, b in zip(scores["fp32"], scores[precision], strict=True)]
        assert 0 < max(gaps) <= 1e-2, (precision, max(gaps))  # autocast ran, and stayed close
    # "auto" is fp32 on a CPU and bf16 (fp16 without bf16) on CUDA.
    assert backends.precision_name(backends.autocast_dtype("auto", "cpu")) == "fp32"


def test_an_unreadable_image_fails_only_its_item(settings, tiny_clip):
    cfg = settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_image_batch": 3})
    items = _pairs(3)
    items[1].images["/candidates/2/image"] = b"\x89PNG\r\n\x1a\n not a png at all"
    results = colorswap_itm(items, cfg, backends)
    assert isinstance(results[0], Produced) and isinstance(results[2], Produced)
    model = backends.image_text_for(cfg)
    assert results[1] == Failed(11, "item 11: the image /candidates/2/image cannot be read (not an image Pillow can read (corrupt, or an unsupported format))",
                                "tiny-clip", model.version)  # the model that tried, recorded with the failure

    good = draw_poster("SAVE WATER", "circle", (40, 80, 220), 1)
    # The OCR reads the slogan as one word: the second premise quotes it so, and gets its box.
    posters = [ItemInput(i, {"id": str(i)}, {"/image": data}, {"visargs.premises": {"visual_premises": ["The words SAVE WATER", "SAVEWATER"]}})
               for i, data in enumerate([good, good[: len(good) // 2]])]
    ocr, truncated = visargs_boxes(posters, settings, backends)
    assert isinstance(ocr, Produced) and ocr.item_id == 0 and ocr.payload["lines"] == 1
    assert [b["vp"] for b in ocr.payload["boxes"]] == [1] and get_workflow("visargs.grounding").check_suggestion("visargs.boxes", ocr.payload) == []
    assert truncated.item_id == 1 and truncated.reason.startswith("item 1: the image cannot be read (")
    assert (truncated.model, truncated.model_version) == backends.OCR_MODEL
    assert "truncated" in truncated.reason.lower() or "broken" in truncated.reason.lower(), truncated.reason


def test_a_job_with_a_corrupt_image_stores_the_rest_and_says_which_item_failed(committed, settings, storage, tiny_clip):
    records, files = colorswap_records(3)
    _, (filter_id,) = _import(committed, settings, storage, "corrupt", ["colorswap.filter"], records, files)
    cfg = settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_image_batch": 5})
    runtime.configure(cfg)
    with transaction(committed) as s:
        ids = s.scalars(sa.select(Item.id).order_by(Item.id)).all()
        broken = s.get(Item, ids[1])
        key = s.scalar(sa.select(Asset.storage_key).where(Asset.sha256 == broken.assets["/candidates/1/image"]))
    damage_stored(storage, key)
    with pytest.raises(runtime.JobFailed) as failed:
        suggest_batch.compute_suggestions(filter_id, "colorswap.itm", ids)
    assert str(failed.value).startswith(
        f"1 of 3 items failed, the other 2 are stored: item {ids[1]}: the image /candidates/1/image cannot be read ("
    )
    with transaction(committed) as s:
        stored = s.scalars(sa.select(Suggestion.item_id).order_by(Suggestion.item_id)).all()
    assert stored == [ids[0], ids[2]]
