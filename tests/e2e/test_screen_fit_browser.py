"""Every annotation screen, and the review screen, fits a 1280×800 window in every state, in Chromium:
a typical item, a ~1,440-word caption, 16 candidates, after a refused submit, and Hebrew and Arabic
captions. Fits means: Submit (Send back on review) and the screen's answer controls lie inside the
viewport, seen and not covered, with the window not scrolled; the form scrolls in its own region
(the page itself is no taller than the window). Right-to-left captions are laid out right to left."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.datasets import all_workflows
from app.db import transaction
from app.models import Annotation
from app.services.annotation import annotation
from tests.conftest import PASSWORD, make_user, png_bytes
from tests.e2e.conftest import log_in, shoot, start_stage
from tests.staged import ANSWERS, demo_record, item_at

WORKFLOWS = sorted(t.name for t in all_workflows())
WORDS = "a small blue bird sits on the branch of an old tree near the river while a dog watches".split()
LONG = " ".join(WORDS[i % len(WORDS)] for i in range(1440)) + "."
HEBREW = "ציפור כחולה קטנה יושבת על ענף של עץ ישן ליד הנהר, וכלב מביט בה."
ARABIC = "طائر أزرق صغير يجلس على غصن شجرة قديمة قرب النهر، وكلب ينظر إليه."
# A caption pair of each language (ColorSwap): the same words with the colours exchanged.
PAIRS = {
    "long": (LONG + " A green circle inside a blue square.", LONG + " A blue circle inside a green square."),
    "hebrew": ("עיגול ירוק בתוך ריבוע כחול.", "עיגול כחול בתוך ריבוע ירוק."),
    "arabic": ("دائرة خضراء داخل مربع أزرق.", "دائرة زرقاء داخل مربع أخضر."),
}
TEXTS = {"long": LONG, "hebrew": HEBREW, "arabic": ARABIC}

# What each screen answers with: every one must be on screen. RTL_TEXT names the element showing
# the record's text, whose direction must follow the text.
CONTROLS = {
    "generic.choice": ["input[name=choice]"],
    "colorswap.filter": [".caption-target", "input[name=choice_1]", "input[name=choice_2]"],
    "colorswap.recaption": ["#caption_1", "#caption_2", ".chosen-image img"],
    "wikido.verify": ["input[name=verdict]"],
    "visargs.premises": ["[data-premise-list] input[data-text]", "input[name=discard]", "[data-add-premise]"],
    "visargs.structure": ["[data-conclusion]", "input[name=discard]", ".step-row:first-child [data-step-text]"],
    "visargs.grounding": ["[data-scroll]", "input[name=current_vp]"],
    "visargs.equivalence": ["input[name=equivalent]"],
    "voldoger.verify": ["input[name=image]", "input[name=label]", "input[name=paraphrase]", "#paraphrase-text", "#vd-note"],
    "artwork.sections": ["input[name=decision]"],
    "artwork.explanation": ["input[name=score]"],
}
RTL_TEXT = {
    "generic.choice": "legend.question",
    "colorswap.filter": ".caption-text",
    "colorswap.recaption": "#caption_1",
    "wikido.verify": "[data-tokens]",
    "visargs.premises": "[data-premise-list] input[data-text]",
    "visargs.structure": ".vp-list .vp-text",
    "visargs.grounding": ".box-list .vp-text",
    "visargs.equivalence": "blockquote",
    "voldoger.verify": "[data-llm-text]",
    "artwork.sections": "[data-text]",
    "artwork.explanation": "[data-tokens]",
}


def _with_text(workflow: str, record: dict, state: str) -> tuple[dict, dict]:
    """The record with its text in the state's kind (long, Hebrew, Arabic), and the answers of the
    stages before (whose output the screen shows)."""
    record, answers = copy.deepcopy(record), {}
    text = TEXTS[state]
    if workflow == "generic.choice":
        record["question"] = text
    elif workflow.startswith("colorswap."):
        record["caption_1"], record["caption_2"] = PAIRS[state]
    elif workflow == "wikido.verify":
        record["caption"] = record["orig_cap"] = text
    elif workflow == "visargs.equivalence":
        record["conclusion_a"] = record["conclusion_b"] = text
    elif workflow.startswith("visargs."):
        text = text[:1000]  # the longest premise or conclusion an annotator may write
        record["candidate_premises"] = [text, "A person holding an umbrella"]
        record["candidate_commonsense"] = [text]
        record["candidate_conclusion"] = text
        answers["visargs.premises"] = {"visual_premises": [text], "discard": False}
        answers["visargs.structure"] = {**ANSWERS["visargs.structure"][0], "commonsense_premises": [text], "conclusion": text}
    elif workflow == "voldoger.verify":
        record["original"]["question"] = record["stylised"]["question"] = text
    elif workflow.startswith("artwork."):
        record["text"] = record["explanation"] = text
    return record, answers


def _sixteen(record: dict, folder) -> dict:
    """The ColorSwap pair with 16 candidate images."""
    record = copy.deepcopy(record)
    record["candidates"] = []
    for k in range(16):
        name = f"many_{k}.png"
        (folder / name).write_bytes(png_bytes((10 + 15 * k, 200 - 10 * k, 90), size=(256, 256)))
        record["candidates"].append({"image": name, "from_caption": 1 + k % 2, "generator": "painter-a"})
    return record


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Each workflow's demo record, its images written once for the module: {workflow: (folder, record)}."""
    made = {}
    for workflow in WORKFLOWS:
        folder = tmp_path_factory.mktemp(workflow)
        made[workflow] = (folder, demo_record(workflow, folder))
    return made


def _stages(committed, settings, storage, demos, workflows: list[str], state: str, *, review: bool) -> dict[str, tuple[int, int]]:
    """Each workflow's item in the state, waiting for annotators or for review: {workflow: (stage id, item id)}."""
    annotators = (make_user(committed, "ann-a"), make_user(committed, "ann-b"))
    made = {}
    for workflow in workflows:
        folder, record = demos[workflow]
        answers = {}
        if state in TEXTS:
            record, answers = _with_text(workflow, record, state)
        elif state == "16 candidates":  # and long captions: the most a pair shows
            record = _sixteen(_with_text(workflow, record, "long")[0], folder)
        made[workflow] = item_at(committed, settings, storage, folder, workflow, review=review, record=record, answers=answers,
                             annotators=annotators)[:2]
    return made


# How each screen's answer is refused by the server: the answer spoiled in the page, then submitted
# past the browser's own checks (the server must say why, on the screen).
SPOIL = {
    "colorswap.recaption": "document.querySelectorAll('#caption_1, #caption_2').forEach(i => i.value = 'a red circle');",
    "wikido.verify": "document.querySelector('input[name=verdict][value=hallucinated]').click();",
    "visargs.premises": "document.querySelectorAll('[data-text]').forEach(i => i.value = '');",
    "visargs.structure": "document.querySelector('[data-conclusion]').value = '';",
    "visargs.grounding": "document.querySelectorAll('.box-numbers input').forEach(i => i.value = '');",
}
REFUSE = """(spoil) => {
  const form = document.querySelector('#annotation-form');
  form.querySelectorAll('input[type=radio]').forEach(i => { i.checked = false; });
  new Function(spoil)();
  form.noValidate = true;
  form.querySelectorAll('[required]').forEach(i => i.removeAttribute('required'));
  form.requestSubmit(document.querySelector('#submit-button'));
}"""

# Each selector's elements inside the viewport, wholly inside every box that clips them (a region
# scrolled away is not seen) and not covered (the element itself, or its label, is what is hit at
# its centre); the window not scrolled and no taller than the viewport.
MEASURE = """(selectors) => {
  const width = innerWidth, height = innerHeight, problems = [];
  const clipper = (el, r) => {
    for (let box = el.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflow === 'visible') continue;
      const c = box.getBoundingClientRect();
      if (r.left < c.left - 0.5 || r.top < c.top - 0.5 || r.right > c.right + 0.5 || r.bottom > c.bottom + 0.5) return box;
    }
    return null;
  };
  for (const selector of selectors) {
    const found = [...document.querySelectorAll(selector)].filter(el => el.type !== 'hidden');
    if (!found.length) problems.push(`${selector}: not on the page`);
    for (const el of found) {
      const r = el.getBoundingClientRect();
      const where = `${selector} at x ${Math.round(r.left)}–${Math.round(r.right)}, y ${Math.round(r.top)}–${Math.round(r.bottom)}`;
      if (!r.width || !r.height) { problems.push(`${selector}: not shown`); continue; }
      if (r.left < 0 || r.top < 0 || r.right > width + 0.5 || r.bottom > height + 0.5) { problems.push(`${where}: off screen`); continue; }
      const clip = clipper(el, r);
      if (clip) { problems.push(`${where}: cut by ${clip.tagName}.${clip.className}`); continue; }
      const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
      const labels = el.labels ? [...el.labels] : [];
      if (!hit || !(el.contains(hit) || labels.some(l => l.contains(hit)) || (hit.tagName === 'LABEL' && hit.contains(el)))) {
        problems.push(`${where}: covered by ${hit ? hit.tagName + '.' + hit.className : 'nothing'}`);
      }
    }
  }
  const page = document.scrollingElement;
  if (scrollY !== 0) problems.push(`window scrolled to ${scrollY}`);
  if (page.scrollHeight > height) problems.push(`page ${page.scrollHeight} px tall`);
  return problems;
}"""


def _measure(page, selectors: list[str]) -> list[str]:
    page.wait_for_function("""() => [...document.images].every(i => i.complete || (i.loading === 'lazy' && i.getBoundingClientRect().top > innerHeight))""")
    return page.evaluate(MEASURE, selectors)


def _direction(page, selector: str) -> str:
    return page.eval_on_selector(selector, "el => getComputedStyle(el).direction")


STATES = ["typical", "long", "refused", "hebrew", "arabic"]


@pytest.mark.parametrize("state", STATES + ["16 candidates"])
def test_every_annotation_screen_fits_the_window(page, committed, settings, storage, demos, state):
    workflows = ["colorswap.filter"] if state == "16 candidates" else WORKFLOWS
    # A refused answer on the longest item: the banner, the long caption (and the 16 candidates) all take room.
    refused = state in ("refused", "16 candidates")
    stages = _stages(committed, settings, storage, demos, workflows, "long" if state == "refused" else state, review=False)
    user_id = make_user(committed, "fit", "annotator", PASSWORD)
    with transaction(committed) as s:  # held for the annotator at once: one page load per screen
        assignments = {workflow: annotation.claim(s, stage_id, user_id).assignment_id for workflow, (stage_id, _) in stages.items()}
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, "fit", PASSWORD)
    problems = {}
    for workflow in workflows:
        page.goto(f"/assignments/{assignments[workflow]}")
        if refused:
            with page.expect_response(lambda r: r.url.endswith("/submit")) as answered:
                page.evaluate(REFUSE, SPOIL.get(workflow, ""))
            assert answered.value.status == 422, (workflow, answered.value.status)
            page.wait_for_selector(".error[role=alert]")
        if workflow == "wikido.verify" and not refused:
            page.keyboard.press("h")  # the corrector opens: the longest state of the screen
        controls = CONTROLS[workflow] + (["#caption", "[data-tokens]"] if workflow == "wikido.verify" else [])
        found = _measure(page, [*controls, "#submit-button", "#skip-button"])
        if state in ("hebrew", "arabic") and _direction(page, RTL_TEXT[workflow]) != "rtl":
            found.append(f"{RTL_TEXT[workflow]} is laid out left to right")
        if found:
            problems[workflow] = found
        shoot(page, f"fit-{workflow}-{state.replace(' ', '-')}")
    assert not problems, "\n".join(f"{workflow}: {'; '.join(found)}" for workflow, found in problems.items())
    assert not errors, errors
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation).where(Annotation.annotator_id == user_id)) == 0


@pytest.mark.parametrize("state", ["typical", "long", "hebrew"])
def test_the_review_screen_fits_the_window(page, committed, settings, storage, demos, state):
    items = _stages(committed, settings, storage, demos, WORKFLOWS, state, review=True)
    make_user(committed, "rita", "reviewer", PASSWORD)
    log_in(page, "rita", PASSWORD)
    problems = {}
    for workflow, (stage_id, item_id) in items.items():
        page.goto(f"/stages/{stage_id}/review/{item_id}")
        found = _measure(page, ["button[name=accept]", "#edit-first", "#comment", "#send-back"])
        if state == "hebrew" and "rtl" not in page.eval_on_selector_all(".review-item [dir=auto]", "els => els.map(e => getComputedStyle(e).direction)"):
            found.append("the item's text is laid out left to right")
        if found:
            problems[workflow] = found
        shoot(page, f"review-{workflow}-{state}")
    assert not problems, "\n".join(f"{workflow}: {'; '.join(found)}" for workflow, found in problems.items())


def test_a_hebrew_caption_reads_right_to_left_and_the_word_struck_by_keyboard_is_the_one_seen(page, committed, settings, storage, demos):
    pointed = "ציפור כְּחֻלָּה קטנה יושבת על ענף, ליד הנהר."  # the second word with its points: one word
    folder, record = demos["wikido.verify"]
    record = {**record, "caption": pointed, "orig_cap": HEBREW}
    stage_id = item_at(committed, settings, storage, folder, "wikido.verify", review=False, record=record)[0]
    user_id = make_user(committed, "rtl", "annotator", PASSWORD)
    log_in(page, "rtl", PASSWORD)
    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    page.wait_for_load_state("load")  # the screen's scripts have set it up: its keys work
    for selector in ("[data-tokens]", ".reference p", "#caption"):
        assert _direction(page, selector) == "rtl", selector
    # Tokens in reading order run right to left, the full stop last, at the left end.
    xs = page.eval_on_selector_all("[data-tokens] .tok", "spans => spans.map(s => s.getBoundingClientRect()).map(r => [r.left, r.right, r.top])")
    assert len(xs) == 10 and all(after[1] <= before[0] + 1 for before, after in zip(xs, xs[1:], strict=False) if after[2] == before[2])
    assert xs[-1][0] == min(x[0] for x in xs if x[2] == xs[-1][2])

    page.keyboard.press("h")
    page.keyboard.press("ArrowLeft")  # on, as the caption reads: the second word
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowRight")  # back to it
    framed = page.locator("[data-tokens] .tok.cursor")
    assert framed.get_attribute("data-i") == "1" and framed.inner_text() == "כְּחֻלָּה"
    page.keyboard.press("x")
    assert page.locator("[data-tokens] .tok.struck").all_inner_texts() == ["כְּחֻלָּה"]
    assert page.input_value("#caption") == "ציפור קטנה יושבת על ענף, ליד הנהר."
    with page.expect_response(lambda r: r.url.endswith("/submit")):
        page.keyboard.press("Enter")
    with transaction(committed) as s:
        payload = s.scalar(sa.select(Annotation.payload).where(Annotation.annotator_id == user_id))
    assert payload["caption"] == "ציפור קטנה יושבת על ענף, ליד הנהר."
    assert [(op["op"], op["i1"], op["i2"], op["old"]) for op in payload["edits"]["ops"]] == [("delete", 1, 2, ["כְּחֻלָּה"])]
