"""Items and their answers as their stage's task shows them (the tasks' view hooks), for the review screen and the item history."""

from __future__ import annotations

from typing import Any

from app.datasets import get_task


def item_view(workflow: str, item, config, results, sizes) -> dict[str, Any]:
    """The item as the stage's screen shows it: the view template and its `item` macro's argument."""
    task = get_task(workflow)
    return {"template": task.view_template, "view": task.view_item(item.data, config, assets=item.assets, results=results, sizes=sizes)}


def answer_view(workflow: str, payload, item, config, results, sizes, kind: str | None = None) -> dict[str, Any]:
    """One annotation, final or suggestion (`kind`) as the stage's task renders it."""
    task = get_task(workflow)
    view = task.view_answer(payload or {}, item.data, config, assets=item.assets, results=results, sizes=sizes, kind=kind)
    return {"template": task.view_template, "view": view}
