"""The WikiDO dataset's demo: drawn shapes with a reference text and a caption that may make things up."""

from __future__ import annotations

import random
from pathlib import Path

from app.datasets.dataset import DemoProject, DemoStage, DemoSuggestion
from app.datasets.drawing import COLOURS, SHAPES, draw_shape
from app.datasets.wikido.tokenedits import tokenize
from app.datasets.wikido.verify import ITM_KIND, UNSUPPORTED_KIND

WIKIDO_GUIDELINES = """Is there any made-up / hallucinated content in the caption that is not supported by
the image or the reference text?

* **C** Correct: everything in the caption is in the image or the reference text.
* **H** Hallucinated: strike the made-up words. **A** strikes the words the model underlined (and
  chooses Hallucinated); otherwise type a word's number to go to it and **Shift** + a number to
  strike through that word (or click, shift-click, ←/→ and **X**). Type in the text field only
  when a word must be replaced or added.
* **W** Wrong: the caption does not describe this image at all.
"""
# WikiDO demo: (made-up addition, where it goes) pairs, and captions about other things for "Wrong".
WIKIDO_ADDITIONS = ["painted by a famous artist in 1913", "beside a tall stone tower", "that glows in the dark"]
WIKIDO_WRONG = ["A bowl of ramen with a boiled egg.", "A portrait of a bearded man in a black coat.",
                "A medieval map of the river delta."]


def wikido_records(folder: Path, n: int, seed: int) -> list[dict]:
    """WikiDO-shaped records over drawn shapes: every third caption is correct, every third
    adds made-up content to the reference, the rest describe something else entirely."""
    rnd = random.Random(seed)
    topics = ["shapes", "paintings", "signs"]
    records = []
    for i in range(n):
        shape, colour = rnd.choice(SHAPES), rnd.choice(list(COLOURS))
        name = f"wikido_{seed}_{i:03d}.png"
        (folder / name).write_bytes(draw_shape(shape, COLOURS[colour], seed * 1000 + i))
        reference = f"A {colour} {shape} on a pale background, from the article on the {shape}."
        kind = i % 3
        if kind == 0:
            caption = f"A {colour} {shape} on a pale background."
        elif kind == 1:
            caption = f"A {colour} {shape} {rnd.choice(WIKIDO_ADDITIONS)}, on a pale background."
        else:
            caption = rnd.choice(WIKIDO_WRONG)
        topic = topics[i % len(topics)]
        records.append(
            {
                "image_id": f"wd-{i:03d}",
                "orig_cap": reference,
                "caption": caption,
                "image": name,
                "page_id": str(1000 + i),
                "page_title": shape.capitalize(),
                "topic": topic,
                "split": "test_ood" if topic == "paintings" else "val",
            }
        )
    return records


def wikido_suggestions(records: list[dict]) -> list[DemoSuggestion]:
    """What the demo knows it wrote: the made-up addition underlined, a caption about something
    else marked unrelated (its verdict is Wrong), and an image-text fit as a CLIP model scores it."""
    out = []
    for r in records:
        caption = r["caption"]
        added = next((a for a in WIKIDO_ADDITIONS if a in caption), None)
        unsupported: dict = {"spans": []}
        if added is not None:
            start = caption.index(added)
            inside = [i for i, t in enumerate(tokenize(caption)) if start <= t.start < start + len(added)]
            unsupported["spans"] = [[inside[0], inside[-1] + 1]]
        elif caption in WIKIDO_WRONG:
            unsupported["unrelated"] = True
        fit = 0.12 if caption in WIKIDO_WRONG else 0.27 if added else 0.31
        out.append(DemoSuggestion("verify", r["image_id"], UNSUPPORTED_KIND, unsupported))
        out.append(DemoSuggestion("verify", r["image_id"], ITM_KIND, {"score": fit}, fit))
    return out


DEMOS = (
    DemoProject(
        "Demo: WikiDO",
        "Twelve drawn images with a reference text and a model-written caption that may make things up: "
        "say Correct, Hallucinated (and strike the made-up words) or Wrong.",
        (DemoStage("wikido.verify", "verify", WIKIDO_GUIDELINES),),
        lambda folder: wikido_records(folder, 12, seed=4),
        wikido_suggestions,
    ),
)
