"""ColorSwap in real Chromium: filter pairs by keyboard only (key presses counted, stored payloads
checked), Tab that walks the page, the full-size view, caption colours, the 1280×800 fit, and
re-captioning a rule-based pair."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa
from playwright.sync_api import expect

from app.db import transaction
from app.models import Annotation, Item, ItemResult
from app.services.annotation import suggestions
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import PASSWORD, colorswap_records, make_user, png_bytes
from tests.e2e.conftest import Keys, fits, log_in_by_keyboard, open_stage, shoot, start_stage

GUIDELINES = "Pick the image that fits each caption best; [the paper](https://example.org/colorswap) shows examples."


def _project(committed, settings, storage, candidates=(4, 4, 12), sizes=None, scores=None, guidelines="") -> tuple[int, int]:
    # By default pair-2 has twelve candidates, so choosing image 11 takes two digits.
    records, files = colorswap_records(len(candidates), candidates=list(candidates))
    files.update(sizes or {})
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        for name, data in files.items():
            Path(tmp, name).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, name).write_bytes(data)
        project = projects.create_project(
            s, "ColorSwap", [projects.StageSpec(workflow="colorswap.filter", guidelines=guidelines), projects.StageSpec(workflow="colorswap.recaption")]
        )
        body = "\n".join(json.dumps(r) for r in records).encode()
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, body, "pairs.jsonl", settings=settings, storage=storage, images=source)
        stages = projects.stages_of(s, project.id)
        if scores:
            for item_id in s.scalars(sa.select(Item.id).where(Item.project_id == project.id)):
                suggestions.store(s, item_id, stages[0].id, "colorswap.itm", "clip-test", {"scores": scores}, model_version="v1")
        return stages[0].id, stages[1].id


def _stored(committed) -> list[dict]:
    with transaction(committed) as s:
        return list(s.scalars(sa.select(Annotation.payload).order_by(Annotation.id)))


def _ready(page) -> str:
    page.wait_for_selector(".caption-target.focused")  # colorswap.js has run: the screen is usable
    return page.url


# Scores that make the model preselect image 3 for caption 1 and image 6 for caption 2.
SCORES = [[0.2, 0.2], [0.21, 0.1], [0.9, 0.1], [0.1, 0.3], [0.3, 0.2], [0.1, 0.8], [0.2, 0.25], [0.15, 0.1]]


def _checked(page, n: int) -> str | None:
    box = page.locator(f"input[name=choice_{n}]:checked")
    return box.get_attribute("value") if box.count() else None


def _focused(page) -> str:
    return page.locator(".caption-target.focused").get_attribute("data-caption")


def test_filter_by_keyboard_then_recaption(page, committed, settings, storage, tmp_path):
    filter_id, recaption_id = _project(committed, settings, storage)
    make_user(committed, "cs", "annotator", PASSWORD)
    log_in_by_keyboard(page, "cs", PASSWORD)
    start_stage(page, filter_id)

    done = set()
    for _ in range(3):
        page.wait_for_url("**/assignments/*")
        page.wait_for_selector(".caption-target.focused")
        pair = page.locator(".annotate-head code").first.inner_text()
        assert _focused(page) == "1"
        if pair == "pair-0":
            page.keyboard.press("3")
            assert (_checked(page, 1), _focused(page)) == ("2", "2")
            page.keyboard.press("1")
            assert _checked(page, 2) == "0"
            assert page.locator('[data-choice-label="1"]').inner_text() == "— image 3"
        elif pair == "pair-1":
            page.keyboard.press("2")
            page.keyboard.press("4")
            page.keyboard.press("z")  # undo caption 2's choice
            assert (_checked(page, 1), _checked(page, 2), _focused(page)) == ("1", None, "2")
            page.keyboard.press("c")  # C switches caption
            assert _focused(page) == "1"
            page.keyboard.press("n")  # no image fits caption 1: the pair is discarded
            page.keyboard.press("2")
            assert (_checked(page, 1), _checked(page, 2)) == ("none", "1")
        else:
            page.keyboard.press("1")
            page.keyboard.press("1")  # image 11
            page.wait_for_function("document.querySelector('input[name=choice_1]:checked') !== null")
            assert _checked(page, 1) == "10"
            page.keyboard.press("5")
            page.keyboard.press("z")
            page.keyboard.press("c")
            page.keyboard.press("2")  # replaces image 11 for caption 1
            page.keyboard.press("7")
            assert (_checked(page, 1), _checked(page, 2)) == ("1", "6")
        url = page.url
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)
        done.add(pair)
    assert done == {"pair-0", "pair-1", "pair-2"}
    assert page.get_by_text("Nothing left").count() or "/stages/" in page.url

    with transaction(committed) as s:
        stored = {
            ext: payload
            for ext, payload in s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id))
        }
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
    assert stored == {
        "pair-0": {"choice_1": 2, "choice_2": 0},
        "pair-1": {"choice_1": None, "choice_2": 1},
        "pair-2": {"choice_1": 1, "choice_2": 6},
    }
    # pair-0 and pair-2 are rule-based and kept; pair-1 is discarded.
    assert statuses == {"pair-0": "active", "pair-1": "discarded", "pair-2": "active"}

    start_stage(page, recaption_id)
    page.wait_for_url("**/assignments/*")
    pair = page.locator(".annotate-head code").first.inner_text()
    assert page.locator(".chosen-image img").count() == 2
    n = pair.split("-")[1]
    first, second = page.locator("#caption_1"), page.locator("#caption_2")
    first.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy red cat {n} in a grey jacket")
    second.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy grey dog {n} in a red jacket")
    page.wait_for_selector("#swap-check.bad >> text=more than colour words")
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_selector("[role=alert] >> text=more than colour words")
    assert second.input_value() == f"a fluffy grey dog {n} in a red jacket"  # what was typed is kept
    second.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy grey cat {n} in a red jacket")
    page.wait_for_selector("#swap-check.ok >> text=A swap pair")
    assert page.locator("#swap-check .move").count() == 2
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old and not u.endswith("/submit"))

    with transaction(committed) as s:
        item = s.scalar(sa.select(Item).where(Item.external_id == pair))
        final = s.scalars(sa.select(ItemResult.payload).where(ItemResult.item_id == item.id).order_by(ItemResult.id)).all()
    assert item.status == "done"
    assert final[-1] == {"caption_1": f"a fluffy red cat {n} in a grey jacket", "caption_2": f"a fluffy grey cat {n} in a red jacket"}


def test_one_image_for_both_captions_says_why_at_once(page, committed, settings, storage):
    filter_id, _ = _project(committed, settings, storage)
    make_user(committed, "cs2", "annotator", PASSWORD)
    log_in_by_keyboard(page, "cs2", PASSWORD)
    start_stage(page, filter_id)
    page.wait_for_url("**/assignments/*")
    page.wait_for_selector(".caption-target.focused")
    screen = page.url
    page.keyboard.press("1")
    page.keyboard.press("1")  # the same image for caption 2
    clash = page.locator("[data-clash]")
    expect(clash).to_be_visible()  # once the wait for a second digit is over
    assert "cannot fit both captions" in clash.inner_text()
    page.keyboard.press("Enter")  # held on the screen: nothing is sent
    page.wait_for_timeout(400)
    assert page.url == screen
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation)) == 0
    page.keyboard.press("z")  # undo caption 2's choice: the message goes
    expect(clash).to_be_hidden()


def test_model_preselection_right_takes_one_key(page, committed, settings, storage):
    filter_id, _ = _project(committed, settings, storage, candidates=(8,), scores=SCORES)
    make_user(committed, "pre", "annotator", PASSWORD)
    open_stage(page, "pre", filter_id)
    screen = _ready(page)
    assert page.evaluate("() => document.activeElement.matches('[data-colorswap-filter]')")  # the screen starts on the grid
    assert (_checked(page, 1), _checked(page, 2)) == ("2", "5")
    keys = Keys(page)
    keys.press("Enter")
    page.wait_for_url(lambda u: u != screen)
    assert keys.count == 1
    assert _stored(committed) == [{"choice_1": 2, "choice_2": 5}]


def test_choosing_both_images_takes_three_keys(page, committed, settings, storage):
    # The model preselects images 3 and 6; the annotator overrules both.
    filter_id, _ = _project(committed, settings, storage, candidates=(8,), scores=SCORES)
    make_user(committed, "both", "annotator", PASSWORD)
    open_stage(page, "both", filter_id)
    screen = _ready(page)
    keys = Keys(page)
    keys.press("7", "1", "Enter")  # image 7 for caption 1, image 1 for caption 2, submit
    page.wait_for_url(lambda u: u != screen)
    assert keys.count == 3
    assert _stored(committed) == [{"choice_1": 6, "choice_2": 0}]


def test_tab_walks_the_page_and_never_switches_caption(page, committed, settings, storage):
    filter_id, _ = _project(committed, settings, storage, candidates=(8,), guidelines=GUIDELINES)
    make_user(committed, "tab", "annotator", PASSWORD)
    open_stage(page, "tab", filter_id)
    _ready(page)
    seen = []
    for _ in range(60):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(
            """() => { const a = document.activeElement, f = document.getElementById('annotation-form');
                       return {tag: a.tagName.toLowerCase(), id: a.id, href: a.getAttribute('href'),
                               inForm: f.contains(a), after: !!(f.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING),
                               guide: !!a.closest('details.guidelines-inline'),
                               caption: document.querySelector('.caption-target.focused').dataset.caption}; }"""
        ))
        assert seen[-1]["caption"] == "1", seen  # Tab never switches caption
        if seen[-1]["tag"] == "summary" and seen[-1]["guide"]:
            break
    ids = [s["id"] for s in seen]
    assert "submit-button" in ids and "skip-button" in ids
    past = seen[ids.index("skip-button") + 1 :]
    # Past the form, focus reaches the page's links (the header's, then the guidelines) instead of cycling captions.
    assert any(s["tag"] == "a" and s["href"] and not s["inForm"] for s in past), seen
    assert seen[-1]["tag"] == "summary" and seen[-1]["guide"], seen  # the Guidelines toggle is reachable
    page.keyboard.press("Enter")  # opens the guidelines, submits nothing
    assert page.locator("details.guidelines-inline[open]").count() == 1
    guideline_link = page.locator("details.guidelines-inline a[href='https://example.org/colorswap']")
    page.keyboard.press("Tab")
    assert guideline_link.evaluate("a => a === document.activeElement")
    assert _stored(committed) == []
    # C switches caption, back and forth.
    page.keyboard.press("c")
    assert _focused(page) == "2"
    page.keyboard.press("c")
    assert _focused(page) == "1"


def test_f_opens_the_framed_candidate_at_real_size(page, committed, settings, storage, tmp_path):
    big = {"img/0_2.png": png_bytes((30, 160, 40), size=(1000, 700))}  # larger than a thumbnail
    filter_id, _ = _project(committed, settings, storage, candidates=(8,), sizes=big)
    make_user(committed, "zoom", "annotator", PASSWORD)
    open_stage(page, "zoom", filter_id)
    screen = _ready(page)
    keys = Keys(page)
    keys.press("ArrowRight", "ArrowRight")  # the keyboard frame on image 3
    assert page.locator(".candidate.cursor").get_attribute("data-index") == "2"
    keys.press("f")
    dialog = page.locator("dialog[data-full-view]")
    page.wait_for_function("() => { const i = document.querySelector('dialog[data-full-view] img'); return i && i.complete && i.naturalWidth > 0 && i.style.width; }")
    assert dialog.evaluate("d => d.open")
    size = page.evaluate("() => { const i = document.querySelector('dialog[data-full-view] img'); const r = i.getBoundingClientRect(); return [i.naturalWidth, i.naturalHeight, r.width, r.height]; }")
    assert size == [1000, 700, 1000, 700]  # the stored image itself, one image pixel per screen pixel
    shoot(page, "colorswap.full-view")
    keys.press("+")
    assert page.evaluate("() => document.querySelector('dialog[data-full-view] img').getBoundingClientRect().width") == 1500
    keys.press("1", "s")  # keys meant for the screen do nothing while the view is open
    assert _checked(page, 1) is None and page.url == screen
    keys.press("Escape")
    assert not dialog.evaluate("d => d.open")
    keys.press("3", "1", "Enter")
    page.wait_for_url(lambda u: u != screen)
    assert _stored(committed) == [{"choice_1": 2, "choice_2": 0}]


def test_each_caption_and_its_pick_share_a_colour_and_a_label(page, committed, settings, storage):
    filter_id, _ = _project(committed, settings, storage, candidates=(8,))
    make_user(committed, "col", "annotator", PASSWORD)
    open_stage(page, "col", filter_id)
    _ready(page)
    page.keyboard.press("2")
    page.keyboard.press("5")
    style = page.evaluate(
        """() => {
          const css = (sel, prop) => getComputedStyle(document.querySelector(sel))[prop];
          return {
            cap1: css('.caption-target.caption-1', 'borderLeftColor'), cap2: css('.caption-target.caption-2', 'borderLeftColor'),
            badge1: css('.caption-target.caption-1 .caption-badge', 'backgroundColor'),
            pick1: css('.candidate.chosen-1', 'borderTopColor'), pick2: css('.candidate.chosen-2', 'borderTopColor'),
            label1: css('.candidate.chosen-1 .picked-1', 'backgroundColor'), label2: css('.candidate.chosen-2 .picked-2', 'backgroundColor'),
            focusedFrame: css('.caption-target.focused', 'borderTopColor'),
          };
        }"""
    )
    assert style["cap1"] == style["pick1"] == style["label1"] == style["badge1"]
    assert style["cap2"] == style["pick2"] == style["label2"]
    assert style["cap1"] != style["cap2"]
    assert style["focusedFrame"] not in (style["pick1"], style["pick2"])  # "choosing" is not a pick
    assert page.locator(".candidate.chosen-1 .picked-1").inner_text() == "1 · caption 1"
    assert page.locator(".candidate.chosen-2 .picked-2").inner_text() == "2 · caption 2"
    assert page.locator(".candidate.chosen-1").get_attribute("data-index") == "1"
    assert page.locator(".caption-target.focused .choosing-mark").is_visible()


def test_eight_candidates_captions_and_submit_fit_1280_by_800(page, committed, settings, storage, tmp_path):
    tall = {f"img/0_{k}.png": png_bytes((20 * k, 90, 160), size=(700, 900)) for k in range(8)}  # taller than the window
    filter_id, recaption_id = _project(committed, settings, storage, candidates=(8,), sizes=tall, scores=SCORES, guidelines=GUIDELINES)
    make_user(committed, "fit", "annotator", PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 800})
    open_stage(page, "fit", filter_id)
    screen = _ready(page)
    page.wait_for_function("() => [...document.querySelectorAll('.candidate img')].every(i => i.complete)")
    shoot(page, "colorswap.filter")
    assert page.locator(".candidate").count() == 8
    fits(page, ".caption-target", every=True)
    fits(page, ".candidate img", every=True)
    fits(page, "#submit-button", every=True)
    assert page.evaluate("() => window.scrollY") == 0
    page.keyboard.press("Enter")  # the model's choice: pair-0 is rule-based and goes on to re-captioning
    page.wait_for_url(lambda u: u != screen)

    start_stage(page, recaption_id)
    page.wait_for_url("**/assignments/*")
    page.wait_for_selector("#swap-check")
    assert page.evaluate("() => document.activeElement.id") == "caption_1"
    shoot(page, "colorswap.recaption")
    page.wait_for_function("() => [...document.querySelectorAll('.chosen-image img')].every(i => i.complete && i.naturalHeight)")
    fits(page, ".chosen-image img", every=True)
    fits(page, "#swap-check", every=True)  # the whole swap check, without scrolling
    assert page.evaluate("() => window.scrollY") == 0


def test_recaption_keys_caret_and_unchanged_pair_caught_in_the_browser(page, committed, settings, storage):
    """Caption 1 has the focus with the caret at its end; one Tab reaches caption 2 (Reset and the
    image links come after the captions, the links named); Enter with the rule-based pair unchanged
    says so on the screen and sends nothing."""
    from app.services.annotation import annotation

    filter_id, recaption_id = _project(committed, settings, storage, candidates=(4,))
    user = make_user(committed, "filterer")
    with transaction(committed) as s:
        claimed = annotation.claim(s, filter_id, user)
        annotation.submit(s, claimed.assignment_id, user, {"choice_1": 0, "choice_2": 1}, "k-filter")
    make_user(committed, "rc", "annotator", PASSWORD)
    keys = Keys(page)
    open_stage(page, "rc", recaption_id)
    page.wait_for_selector("#caption_1:focus")
    page.wait_for_function("document.readyState === 'complete'")
    caret = page.evaluate("() => { const i = document.activeElement; return [i.selectionStart, i.selectionEnd, i.value.length]; }")
    assert caret[0] == caret[1] == caret[2] > 0, caret
    assert page.get_by_role("link", name="Image chosen for caption 1, full size").count() == 1
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" and "/submit" in r.url else None)
    screen = page.url
    keys.press("Enter")
    note = page.locator("[data-unchanged-note]")
    expect(note).to_have_text("Both captions are unchanged: this pair's captions were made by rules and must be rewritten.")
    fits(page, "[data-unchanged-note]", "#submit-button")
    page.wait_for_timeout(300)
    assert sent == [] and page.url == screen and page.evaluate("() => document.activeElement.id") == "caption_1"
    keys.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "caption_2"
    keys.press("Tab")
    assert page.evaluate("() => document.activeElement.tagName") == "A"  # then the images and the Reset buttons
    assert not keys.errors, keys.errors
