"""Review pages: the queue of disagreements, adjudication, item history, and the agreement dashboard."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app import jsontext
from app.datasets import get_workflow
from app.errors import DomainError, Invalid, ascii_digits
from app.models import Role
from app.services.annotation import suggestions
from app.services.projects import projects
from app.services.quality import accuracy, bias, gold, qualification
from app.services.review import agreement, equivalence, review
from app.web.annotate_pages import live_check_fragment, workflow_screen
from app.web.deps import Answer, BigId, Db, Id, LiveProject, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash, take_flash
from app.web.item_views import answer_view, history_page, item_view
from app.web.templating import render, render_error

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])
reviewer_only = page_role(Role.reviewer)


@router.get("/stages/{stage_id}/review")
def review_list(request: Request, stage_id: Id, session: Db, user: Principal = Depends(reviewer_only)):
    stage = projects.get_stage(session, stage_id)
    project = projects.get_project(session, stage.project_id)
    rows = review.review_queue(session, stage_id, reviewer_id=user.id)
    waiting = review.sent_back(session, stage_id)
    return render(request, "review/list.html", {"stage": stage, "project": project, "rows": rows, "waiting": waiting})


@router.get("/stages/{stage_id}/review/next")
def review_next(stage_id: Id, session: Db, user: Principal = Depends(reviewer_only)):
    """The item annotators disagree on most, or the queue when nothing waits: where a decision leads."""
    rows = review.review_queue(session, stage_id, limit=500, reviewer_id=user.id)
    target = f"/stages/{stage_id}/review/{rows[0].item_id}" if rows else f"/stages/{stage_id}/review"
    return RedirectResponse(target, status_code=303)


@router.post("/stages/{stage_id}/review/{item_id}/take-back")
def take_back(stage_id: Id, item_id: BigId, session: Db, user: Principal = Depends(reviewer_only)):
    """Stop waiting for the annotators of a sent-back item and review it again."""
    review.take_back(session, stage_id, item_id, user.id)
    return RedirectResponse(f"/stages/{stage_id}/review/{item_id}", status_code=303)


def _screen_context(session: Session, stage_id: int, item_id: int, reviewer_id: int, **extra) -> dict:
    screen = review.open_review(session, stage_id, item_id)
    project = projects.get_project(session, screen.stage.project_id)
    ctx = screen.item_context
    annotations = [
        {
            "id": a.annotation_id,
            "annotator": a.annotator,
            "submitted_at": a.submitted_at,
            "seconds": a.seconds_spent,
            "shown": answer_view(screen.stage.workflow, ctx, a.payload),
            "json": json.dumps(a.payload, ensure_ascii=False, indent=2),
        }
        for a in screen.annotations
    ]
    return {
        "stage": screen.stage,
        "project": project,
        "item": screen.item.data,
        "item_id": screen.item.id,
        "status": screen.item.status,
        "shown_item": item_view(screen.stage.workflow, ctx),
        "differing": screen.differing,
        "annotations": annotations,
        "final_text": extra.pop("final_text", None) or (annotations[0]["json"] if annotations else "{}"),
        "own_work": review.own_work_barred(session, screen.stage, item_id, reviewer_id),
        **extra,
    }


@router.get("/stages/{stage_id}/review/{item_id}")
def review_screen(request: Request, stage_id: Id, item_id: BigId, session: Db, user: Principal = Depends(reviewer_only)):
    return render(request, "review/screen.html", _screen_context(session, stage_id, item_id, user.id))


@router.post("/stages/{stage_id}/review/{item_id}")
def review_submit(
    request: Request,
    stage_id: Id,
    item_id: BigId,
    session: Db,
    accept: int | None = Form(None),
    action: str = Form(""),
    final: str = Form(""),
    comment: str = Form(""),
    user: Principal = Depends(reviewer_only),
):
    """Accept one annotation, send the item back with a comment, or save a final version written as JSON."""
    try:
        with savepoint(session):
            if action == "send_back":
                review.send_back(session, stage_id, item_id, user.id, comment)
            else:
                chosen = {"accept_annotation_id": accept} if accept is not None else {"payload": _json_object(final)}
                review.resolve(session, stage_id, item_id, user.id, comment=comment, **chosen)
    except DomainError as exc:
        ctx = _screen_context(session, stage_id, item_id, user.id, final_text=final, comment=comment, failed=action or ("accept" if accept else "final"))
        return render_error(request, "review/screen.html", ctx, exc)
    return RedirectResponse(f"/stages/{stage_id}/review/next", status_code=303)


def _json_object(text: str) -> dict:
    try:
        payload = jsontext.loads(text)
    except jsontext.NumberRefused as exc:
        raise Invalid(f"The final version holds a number JSON does not allow: {exc}.") from None
    except json.JSONDecodeError as exc:
        raise Invalid(f"The final version is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    if not isinstance(payload, dict):
        raise Invalid("The final version is a JSON object, like the annotations above.")
    return payload


def _editor_context(session: Session, stage_id: int, item_id: int, start: int | None, values: dict | None = None) -> dict:
    """The workflow's own annotation screen, filled from one annotation (or from what was posted)."""
    screen = review.open_review(session, stage_id, item_id)
    project = projects.get_project(session, screen.stage.project_id)
    screen.suggestions = suggestions.for_item(session, item_id, stage_id)
    workflow = get_workflow(screen.stage.workflow)
    chosen = next((a for a in screen.annotations if a.annotation_id == start), screen.annotations[0] if screen.annotations else None)
    if values is None:
        values = workflow.payload_values(screen.item_context, chosen.payload) if chosen else {}
    return {
        **workflow_screen(workflow, screen, values, f"/stages/{stage_id}/review/{item_id}/check"),
        "project": project,
        "status": screen.item.status,
        "start": chosen,
        "annotations": screen.annotations,
    }


@router.get("/stages/{stage_id}/review/{item_id}/edit")
def review_editor(request: Request, stage_id: Id, item_id: BigId, session: Db, start: BigId | None = None,
                  user: Principal = Depends(reviewer_only)):
    """Write the final version in the workflow's own editor, starting from annotation `start`."""
    return render(request, "review/edit.html", _editor_context(session, stage_id, item_id, start))


@router.post("/stages/{stage_id}/review/{item_id}/edit")
def review_edit_submit(request: Request, stage_id: Id, item_id: BigId, session: Db, answer: Answer,
                       user: Principal = Depends(reviewer_only)):
    comment = answer.meta.get("comment") or ""
    try:
        with savepoint(session):
            payload = get_workflow(projects.get_stage(session, stage_id).workflow).form_to_payload(answer.values)
            review.resolve(session, stage_id, item_id, user.id, payload=payload, comment=comment)
    except DomainError as exc:
        start = int(answer.meta["start"]) if ascii_digits(answer.meta.get("start") or "") else None
        ctx = _editor_context(session, stage_id, item_id, start, answer.values)
        return render_error(request, "review/edit.html", ctx, exc, comment=comment)
    return RedirectResponse(f"/stages/{stage_id}/review/next", status_code=303)


@router.post("/stages/{stage_id}/review/{item_id}/check")
def review_live_check(request: Request, stage_id: Id, item_id: BigId, session: Db, answer: Answer,
                      user: Principal = Depends(reviewer_only)):
    """The workflow's live check of the reviewer's version, as a fragment."""
    return live_check_fragment(request, review.open_review(session, stage_id, item_id), answer.values)


@router.get("/items/{item_id}/history")
def history(request: Request, item_id: BigId, session: Db, user: Principal = Depends(reviewer_only)):
    """An item's full history: annotations (every revision), finals, suggestions and reviews, who and when,
    each answer shown as its stage's workflow shows it."""
    found = review.item_history(session, item_id)
    project = projects.get_project(session, found.item.project_id)
    return render(request, "review/history.html", {
        "item": found.item.data, "item_id": found.item.id, "status": found.item.status, "project": project, **history_page(found),
        "gold_stages": gold.final_stages(session, item_id), "gold_message": take_flash(request, "gold"),
    })


# The heatmap's sequential scale (light yellow to deep green), by position in [0, 1].
SCALE = ((0.0, (255, 255, 204)), (0.5, (120, 198, 121)), (1.0, (0, 104, 55)))
SELF_COLOUR = "#eee"  # the diagonal: each annotator with themself, always 1, kept off the scale


def _ramp(t: float) -> str:
    t = max(0.0, min(1.0, t))
    for (t0, c0), (t1, c1) in zip(SCALE, SCALE[1:]):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return "rgb({},{},{})".format(*(round(a + (b - a) * f) for a, b in zip(c0, c1)))
    return "rgb({},{},{})".format(*SCALE[-1][1])


def heatmap(matrix: list[list[float | None]]) -> dict:
    """Cells coloured on a fixed scale from 0 to 1, the same on every page and for every report, so
    that a colour always means the same figure (kappa below 0, worse than chance, takes the 0 end);
    the diagonal (each annotator with themself) is kept off the scale; and the scale's legend."""
    pairs = [v for i, row in enumerate(matrix) for j, v in enumerate(row) if i != j and v is not None]
    cells = []
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            t = None if v is None or i == j else max(0.0, min(1.0, v))
            colour = SELF_COLOUR if i == j else "#ddd" if t is None else _ramp(t)
            cells.append({"x": j, "y": i, "value": v, "colour": colour, "self": i == j, "dark": t is not None and t > 0.65})
    legend = {
        "low": SCALE[0][0], "high": SCALE[-1][0], "pairs": len(pairs) // 2,
        "gradient": f"linear-gradient(to right, {_ramp(0)}, {_ramp(0.5)}, {_ramp(1)})",
        "seen": (min(pairs), max(pairs)) if pairs else None,
    }
    return {"cells": cells, "legend": legend}


def _dashboard_context(session: Session, stage_id: int, **extra) -> dict:
    stage = projects.get_stage(session, stage_id)
    project = projects.get_project(session, stage.project_id)
    stored = agreement.latest(session, stage_id)
    facets = []
    if stored is not None:
        for name, figures in stored.report["facets"].items():
            names, matrix, metric = agreement.pair_matrix(stored.report, name)
            facets.append({"name": name, "figures": figures, "names": names, "metric": metric, **heatmap(matrix)})
    judging = None
    if get_workflow(stage.workflow).equivalence:
        found = equivalence.judging_stage(session, stage)
        judging = {"project_id": found.project_id, "stage_id": found.id} if found else {}
    report = accuracy.accuracy_report(session, stage_id)
    gold_view = {"report": report, "chart": accuracy.trend_chart(report), "standings": qualification.standings(session, stage_id)}
    return {"stage": stage, "project": project, "stored": stored, "facets": facets, "judging": judging, "gold": gold_view,
            "bias": bias.page_view(session, stage), **extra}


@router.get("/stages/{stage_id}/agreement")
def dashboard(request: Request, stage_id: Id, session: Db, user: Principal = Depends(reviewer_only)):
    """The stage's agreement dashboard, from the newest stored report, and gold accuracy per annotator."""
    polled = request.headers.get("HX-Request")  # a poll must not eat the notices
    gold_message = None if polled else take_flash(request, "gold")
    notice = None if polled else take_flash(request, "agreement")
    # Right after Recompute the report is on its way: the page polls until the worker stores it.
    pending = bool(notice and notice.get("pending"))
    ctx = _dashboard_context(session, stage_id, gold_message=gold_message, notice=notice and notice["text"], pending=pending)
    return render(request, "review/agreement.html", {**ctx, "manage": qualification.can_manage(session, ctx["stage"], user)})


@router.post("/stages/{stage_id}/agreement")
def recompute(request: Request, stage_id: Id, session: Db, user: Principal = Depends(reviewer_only)):
    """Queue the worker job that recomputes and stores the stage's agreement report."""
    from app.worker import jobs

    # Queued now, on the job queue's own connection (a defer cannot share our transaction): the notice
    # names the job, and the job reads only what is already committed, nothing this request writes.
    job_id = jobs.defer_agreement(request.app.state.settings, stage_id)
    notice = f"Job {job_id} queued: the worker computes the figures." if job_id else "A computation is already queued."
    # Redirect after the POST: reloading the page it lands on must not queue another job.
    flash(request, {"text": notice, "pending": True}, "agreement")
    return RedirectResponse(f"/stages/{stage_id}/agreement", status_code=303)


@router.post("/stages/{stage_id}/equivalence")
def judge_equivalence(request: Request, stage_id: Id, session: Db, user: Principal = Depends(reviewer_only)):
    """Queue the differently worded answer pairs of the stage for equivalence judgements."""
    try:
        with savepoint(session):
            made = equivalence.create_judgements(session, stage_id, actor_id=user.id)
    except DomainError as exc:
        return render_error(request, "review/agreement.html", _dashboard_context(session, stage_id), exc)
    notice = (
        f"{made['created']} new pairs to judge ({made['pairs']} pairs in all, {made['same_wording']} worded the same). "
        "Recompute once they are judged."
    )
    flash(request, {"text": notice, "pending": False}, "agreement")
    return RedirectResponse(f"/stages/{stage_id}/agreement", status_code=303)
