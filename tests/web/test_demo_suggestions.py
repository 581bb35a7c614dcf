"""The demo's suggestions: every stage that reads one has them, and its one-key path stores the suggested answer."""

from __future__ import annotations

import html as htmllib
import json
import re
import uuid

import sqlalchemy as sa

from app.datasets import all_datasets, get_workflow, producers
from app.datasets.colorswap.filter import preselect
from app.datasets.dataset import DEMO_MODEL
from app.db import transaction
from app.models import Annotation, Assignment, Item, Project, Stage, Suggestion, SuggestionOutcome
from app.services.annotation.pipeline import finalize
from app.services.demo.demo import ensure_project, load_demo
from app.worker import jobs
from tests.conftest import csrf_from, login, make_user, start_annotating


def _load(app, settings, tmp_path, project: str | None = None) -> None:
    """The whole demo, or only one of its projects (faster)."""
    with transaction(app.state.sessions) as s:
        if project is None:
            load_demo(s, settings, app.state.storage)
        else:
            demo = next(d for ds in all_datasets() for d in ds.demos if d.name == project)
            assert ensure_project(s, settings, app.state.storage, demo, tmp_path)
    make_user(app.state.sessions, "ann")


def _stage(sessions, project: str, name: str) -> int:
    with transaction(sessions) as s:
        return s.scalar(sa.select(Stage.id).join(Project).where(Project.name == project, Stage.name == name))


def _claimed(sessions, screen: str) -> tuple[str, int, dict]:
    """The submit address of a screen, the item it shows and that item's suggestions by kind."""
    action = re.search(r'action="(/assignments/(\d+)/submit)"', screen)
    with transaction(sessions) as s:
        item_id = s.scalar(sa.select(Assignment.item_id).where(Assignment.id == int(action[2])))
        rows = s.execute(sa.select(Suggestion.kind, Suggestion.payload).where(Suggestion.item_id == item_id)).all()
    return action[1], item_id, dict(rows)


def _submit(client, screen: str, action: str, fields: dict):
    form = {"csrf_token": csrf_from(screen), "idempotency_key": uuid.uuid4().hex, **fields}
    r = client.post(action, data=form, follow_redirects=False)
    assert r.status_code in (200, 303), r.text[:500]


def _stored(sessions, item_id: int) -> tuple[dict, list[str]]:
    """The item's one annotation, and what it did with each suggestion the screen showed."""
    with transaction(sessions) as s:
        annotation = s.scalar(sa.select(Annotation).where(Annotation.item_id == item_id))
        outcomes = s.scalars(sa.select(SuggestionOutcome.outcome).where(SuggestionOutcome.annotation_id == annotation.id)).all()
        return annotation.payload, list(outcomes)


def test_every_demo_stage_that_reads_suggestions_has_them_and_the_worker_has_none_to_add(app, settings, tmp_path):
    _load(app, settings, tmp_path)
    with transaction(app.state.sessions) as s:
        # Kinds a producer computes; drafted kinds (a vision-language model's) come only from a prompt run.
        produced = set(producers())
        stages = [st for st in s.scalars(sa.select(Stage).order_by(Stage.id)) if produced & set(get_workflow(st.workflow).suggestion_kinds)]
        assert {st.workflow for st in stages} == {"colorswap.filter", "wikido.verify", "visargs.grounding"}
        for st in stages:
            models = s.scalars(sa.select(Suggestion.model).where(Suggestion.stage_id == st.id)).all()
            assert models and set(models) == {DEMO_MODEL}, st.workflow
        # Every kind of every item waiting in those stages is there: reconcile finds nothing missing.
        assert jobs.missing_batches(s, settings, available_only=False) == []


def test_colorswap_preselection_is_filled_in_and_enter_stores_it(client, app, settings, tmp_path):
    _load(app, settings, tmp_path, "Demo: ColorSwap")
    login(client, "ann")
    screen = start_annotating(client, _stage(app.state.sessions, "Demo: ColorSwap", "filter")).text
    action, item_id, suggested = _claimed(app.state.sessions, screen)
    pre = preselect(suggested["colorswap.itm"]["scores"])
    assert "data-suggestion" in screen and f"<code>{DEMO_MODEL} 1</code>" in screen
    checked = dict(re.findall(r'name="(choice_[12])" value="(\d+)" checked', screen))
    assert checked == {"choice_1": str(pre.choice_1), "choice_2": str(pre.choice_2)}

    _submit(client, screen, action, checked)  # Enter: the form as it was filled in
    assert _stored(app.state.sessions, item_id) == ({"choice_1": pre.choice_1, "choice_2": pre.choice_2}, ["accepted"])


def _kept_text(screen: str) -> str:
    """The corrected caption wikido.js writes after A: the tokens not underlined, joined as it joins them."""
    out, gap, first = "", False, True
    for cls, space, text in re.findall(r'<span class="tok( unsupported)?" data-i="\d+" data-space="(\d)"[^>]*>([^<]*)</span>', screen):
        text = htmllib.unescape(text)
        if not cls:
            if not first and gap and not re.fullmatch(r"[,.;:!?)\]}%'’”]", text) and not re.search(r"[(\[{“$]$", out):
                out += " "
            out += text
            first = gap = False
        gap = gap or space == "1"
    return out


def test_wikido_underlines_the_made_up_words_and_a_then_enter_strikes_them(client, app, settings, tmp_path):
    _load(app, settings, tmp_path, "Demo: WikiDO")
    login(client, "ann")
    screen = start_annotating(client, _stage(app.state.sessions, "Demo: WikiDO", "verify")).text
    action, item_id, suggested = _claimed(app.state.sessions, screen)
    while not suggested["wikido.unsupported"]["spans"]:  # a correct caption: nothing to strike, so the next one
        assert "image-text fit" in screen
        r = client.post(action.replace("/submit", "/skip"), data={"csrf_token": csrf_from(screen)}, follow_redirects=True)
        screen = r.text
        action, item_id, suggested = _claimed(app.state.sessions, screen)
    assert screen.count('class="tok unsupported"') > 0 and f"<code>{DEMO_MODEL} 1</code>" in screen
    caption = _kept_text(screen)
    with transaction(app.state.sessions) as s:
        original = s.get(Item, item_id).data["caption"]
    assert "," in caption and len(caption) < len(original)

    _submit(client, screen, action, {"verdict": "hallucinated", "caption": caption})  # A, Enter
    payload, outcomes = _stored(app.state.sessions, item_id)
    assert (payload["verdict"], payload["caption"], outcomes) == ("hallucinated", caption, ["accepted"])


def test_visargs_grounding_shows_the_demo_boxes_and_shift_a_enter_stores_them(client, app, settings, tmp_path):
    _load(app, settings, tmp_path, "Demo: VisArgs")
    sessions = app.state.sessions
    with transaction(sessions) as s:
        project = s.scalar(sa.select(Project).where(Project.name == "Demo: VisArgs"))
        premises, structure, grounding = s.scalars(sa.select(Stage).where(Stage.project_id == project.id).order_by(Stage.position))
        item = s.scalar(sa.select(Item).where(Item.project_id == project.id, Item.external_id == "poster-0-0"))
        # The drafts fixed as the guidelines ask: the merged premise split, the made-up one dropped.
        finalize(s, item, premises, {"visual_premises": ["The words SAVE WATER", "A blue drop"]}, discard=False, source="test")
        finalize(s, item, structure, {"commonsense_premises": ["Every drop of water counts"], "conclusion": "Turn off the tap.",
                                      "reasoning_steps": ["(VP1, VP2, CP1 -> C): Turn off the tap."]}, discard=False, source="test")
        grounding_id = grounding.id
    login(client, "ann")
    screen = start_annotating(client, grounding_id).text
    action, item_id, suggested = _claimed(sessions, screen)
    assert f"dashed boxes come from <code>{DEMO_MODEL} 1</code>" in screen
    boxes = [json.loads(htmllib.unescape(b)) for b in re.findall(r'data-suggested="([^"]+)"', screen)]
    expected = [{k: b[k] for k in ("startX", "startY", "w", "h")} for b in suggested["visargs.regions"]["boxes"]]
    assert boxes == expected and len(boxes) == 2
    text, shape = expected
    assert text["startY"] < 100 <= shape["startY"]  # the slogan is at the top, the shape below it

    fields = {f"{f}_{i}": b[k] for i, b in enumerate(boxes) for f, k in (("x", "startX"), ("y", "startY"), ("w", "w"), ("h", "h"))}
    _submit(client, screen, action, fields)  # Shift+A takes every suggested box, Enter submits
    assert _stored(sessions, item_id) == ({"b_box": expected}, ["accepted"])
