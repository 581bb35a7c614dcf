"""Items and their answers as their stage's workflow shows them (the workflows' view hooks), for the review screen and the item history."""

from __future__ import annotations

from typing import Any

from app.datasets import get_workflow
from app.datasets.workflow import ItemContext


def item_view(name: str, ctx: ItemContext) -> dict[str, Any]:
    """The item as the stage's screen shows it: the view template and its `item` macro's argument."""
    workflow = get_workflow(name)
    return {"template": workflow.view_template, "view": workflow.view_item(ctx)}


def answer_view(name: str, ctx: ItemContext, payload, kind: str | None = None) -> dict[str, Any]:
    """One annotation, final or suggestion (`kind`) as the stage's workflow renders it."""
    workflow = get_workflow(name)
    return {"template": workflow.view_template, "view": workflow.view_answer(ctx, payload or {}, kind)}


def history_page(found) -> dict[str, Any]:
    """The history page's item view and rows (`found`: `review.item_history`'s answer): each payload as its
    stage's workflow shows it, the rest of an entry's detail as readable fields."""
    item = found.item
    current = found.stages.get(item.stage_id) or next(iter(found.stages.values()))
    contexts = {st.id: ItemContext(item.data, st.config, found.results, item.assets, sizes=found.sizes) for st in found.stages.values()}
    rows = []
    for e in found.entries:
        stage = found.stages.get(e.stage_id)
        shown = None
        if e.payload is not None and stage is not None:
            shown = answer_view(stage.workflow, contexts[stage.id], e.payload, e.kind)
        rows.append({"at": e.at, "what": e.what, "who": e.who, "stage": e.stage, "shown": shown,
                     "detail": {k: v for k, v in e.detail.items() if v not in (None, "")}})
    return {"entries": rows, "shown_item": item_view(current.workflow, contexts[current.id])}
