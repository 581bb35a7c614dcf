"""Model backends on this machine's CPU: a tiny CLIP loaded through the real path, OCR boxes, text similarity."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw, ImageFont

from app.agreement.boxes import iou
from app.datasets.suggest import ItemInput
from app.datasets.wikido.producers import phrases, wikido_unsupported
from app.worker import backends


def test_a_tiny_clip_loads_from_its_directory_and_scores(tiny_clip):
    model = backends.image_text(str(tiny_clip))
    assert model.name == "tiny-clip" and len(model.version) == 12 and model.device in ("cpu", "cuda")
    images = [Image.new("RGB", (40, 30), c) for c in ("red", "blue", "green")]
    scores = model.scores(images, ["a red square", "a blue square"])
    assert len(scores) == 3 and all(len(row) == 2 for row in scores)
    assert all(-1.0 <= s <= 1.0 for row in scores for s in row)
    # The same inputs give the same scores (no randomness at inference).
    assert model.scores(images[:1], ["a red square", "a blue square"])[0] == pytest.approx(scores[0], abs=1e-5)


def test_missing_model_says_which_setting(tmp_path):
    with pytest.raises(backends.ModelUnavailable, match="VLCURATE_CLIP_MODEL_DIR"):
        backends.image_text(None)
    with pytest.raises(backends.ModelUnavailable, match="holds no model"):
        backends.image_text(str(tmp_path))


def test_ocr_finds_each_word_where_it_was_drawn():
    img = Image.new("RGB", (640, 360), "white")
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=48)
    drawn = {}
    for word, xy in {"SAVE": (30, 40), "WATER": (330, 40), "TODAY": (180, 230)}.items():
        d.text(xy, word, fill="black", font=font)
        x0, y0, x1, y1 = d.textbbox(xy, word, font=font)
        drawn[word] = {"startX": x0, "startY": y0, "w": x1 - x0, "h": y1 - y0}
    found = {b.text.strip().upper(): {"startX": b.x, "startY": b.y, "w": b.w, "h": b.h} for b in backends.ocr(img)}
    for word, box in drawn.items():
        assert word in found, (word, list(found))
        assert iou(box, found[word]) > 0.5, (word, box, found[word])


def test_text_similarity_ranks_a_paraphrase_above_an_unrelated_sentence():
    model = backends.text_similarity()
    sims = model.similarity(["A cat sleeps on the sofa."], ["A kitten is napping on the couch.", "Stock markets fell sharply today."])
    assert sims[0][0] > sims[0][1] + 0.2


def test_unsupported_phrases_are_flagged(settings):
    caption = "A stone church in Paris, built by monks in 1850, with a golden dragon on the roof."
    item = ItemInput(1, {"caption": caption, "orig_cap": "A stone church in Paris, built in 1850 by local monks."}, {}, {})
    (produced,) = wikido_unsupported([item], settings, backends)
    spans = produced.payload["spans"]
    words = caption.replace(",", " ,").replace(".", " .").split()
    flagged = [" ".join(words[a:b]) for a, b in spans]
    assert any("dragon" in f for f in flagged), flagged
    assert not any("church" in f for f in flagged), flagged
    assert phrases("a red cat, in a hat with a bow") == [(0, 3), (4, 7), (7, 10)]


def test_region_windows_cover_the_image_within_bounds():
    from app.datasets.visargs.producers import windows

    regions = windows(480, 360)
    assert regions[0] == (0, 0, 480, 360)
    assert all(x >= 0 and y >= 0 and x + w <= 480 and y + h <= 360 for x, y, w, h in regions)
    assert {(w, h) for *_, w, h in regions} == {(480, 360), (240, 180), (160, 120)}


def test_regions_are_proposed_for_each_premise(settings, tiny_clip):
    from app.datasets.visargs.demo import draw_poster
    from app.datasets.visargs.producers import visargs_regions

    item = ItemInput(7, {"id": "p"}, {"/image": draw_poster("SAVE WATER", "circle", (40, 80, 220), 1)},
                     {"visargs.premises": {"visual_premises": ["The words SAVE WATER", "A blue circle"]}})
    (produced,) = visargs_regions([item], settings.model_copy(update={"clip_model_dir": tiny_clip}), backends)
    boxes = produced.payload["boxes"]
    assert [b["vp"] for b in boxes] == [0, 1] and produced.model == "tiny-clip"
    assert all(b["startX"] + b["w"] <= 480 and b["startY"] + b["h"] <= 360 for b in boxes)
