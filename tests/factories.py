"""Test data factories: users, tokens, projects, items and annotations, made through the services in a
given session (flushed, never committed: the caller's transaction decides)."""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path

from sqlalchemy.orm import Session

PASSWORD = "correct horse battery"
_serial = itertools.count(1)


def user(session: Session, username: str | None = None, role: str = "annotator", password: str = PASSWORD) -> int:
    from app.services.users.users import create_user

    return create_user(session, username or f"user{next(_serial)}", role, password).id


def token(session: Session, user_id: int) -> str:
    from app.services.users.users import create_token, get_user

    return create_token(session, get_user(session, user_id))[1]


def bearer(session: Session, username: str, role: str = "annotator") -> dict[str, str]:
    """Authorization headers of a new user with a new API token."""
    return {"Authorization": f"Bearer {token(session, user(session, username, role))}"}


def project(session: Session, workflows: list[str] | str = "generic.choice", *, name: str | None = None,
            overlap: int = 1, config: dict | None = None, **stage) -> tuple[int, list[int]]:
    """A project with one stage per workflow; returns (project id, stage ids)."""
    from app.services.projects import projects

    names = [workflows] if isinstance(workflows, str) else workflows
    if config is None and names[0] == "generic.choice":
        config = {"choices": ["a", "b", "c"]}
    specs = projects.stage_specs_for(names[0], then=names[1:], overlap=overlap, config=config, **stage)
    made = projects.create_project(session, name or f"p-{uuid.uuid4().hex[:6]}", specs)
    return made.id, [s.id for s in projects.stages_of(session, made.id)]


def items(session: Session, settings, storage, project_id: int, records: list[dict], files: dict[str, bytes], folder: Path) -> int:
    """Import `records` naming the images in `files` (written to `folder`); returns how many were created."""
    from app.services.imports import imports

    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    body = "\n".join(json.dumps(r) for r in records).encode()
    source = imports.ImageSource(settings, storage, base=folder)
    try:
        return imports.import_items(session, project_id, body, "items.jsonl", settings=settings, storage=storage, images=source).created
    finally:
        source.close()


def choice_items(session: Session, settings, storage, project_id: int, n: int, folder: Path) -> int:
    """`n` generic.choice items sharing one image."""
    from tests.conftest import png_bytes

    records = [{"id": f"it-{i}", "image": "img.png", "question": f"Q{i}"} for i in range(n)]
    return items(session, settings, storage, project_id, records, {"img.png": png_bytes()}, folder)


def annotation(session: Session, stage_id: int, user_id: int, payload: dict, key: str | None = None):
    """Claim the user's next item in the stage and submit `payload` for it; returns the submit result."""
    from app.services.annotation import annotation as annotations

    claimed = annotations.claim(session, stage_id, user_id)
    assert claimed is not None, "nothing left to claim"
    return annotations.submit(session, claimed.assignment_id, user_id, payload, key or uuid.uuid4().hex)


# -- drafting ------------------------------------------------------------------------------------


def choice_draft_kind(name: str = "generic.test-choice"):
    """A draft kind for generic.choice stages (the built-in datasets declare theirs): the model picks
    one of the choices; its draft is the answer as it is."""
    from app.datasets.draft import DraftKind

    return DraftKind(
        name=name, title="Pick the answer (test)", workflows=("generic.choice",), suggestion_kind="generic.choice-draft",
        schema={"type": "object", "properties": {"choice": {"type": "string"}}, "required": ["choice"]},
        template="Question: {question}\nAnswer with one of: {choices}.", system="You answer questions about images.",
        fields=lambda item: {"question": item.data.get("question", ""), "choices": ", ".join(item.data.get("choices") or [])},
        placeholders=("question", "choices"), to_payload=lambda answer, item: {"choice": answer["choice"]},
        as_answer=lambda payload, item: {"choice": payload["choice"]}, settings={"max_tokens": 16, "temperature": 0.0},
    )


def install_draft_kind(monkeypatch, kind, dataset: str) -> None:
    """Declare `kind` on a registered dataset for the length of the test (beside the ones it has)."""
    from app.datasets import get_dataset

    cls = type(get_dataset(dataset))
    monkeypatch.setattr(cls, "drafts", (*cls.drafts, kind))


def prompt(session: Session, stage_id: int, kind: str, *, drafter: str = "test-drafter", **fields):
    """The stage's next prompt version of `kind` (defaults: the kind's prompt)."""
    from app.services.drafting import prompts

    return prompts.new_version(session, stage_id, kind, drafter=drafter, **fields)


def drafted(session: Session, prompt, item_id: int, payload: dict, *, model: str = "tiny-vlm", latency_ms: int | None = None,
            prompt_tokens: int | None = None, completion_tokens: int | None = None) -> int:
    """A valid draft of `prompt` for the item, stored as the draft job stores one; returns its id."""
    from app.datasets import draft_kinds
    from app.models import Suggestion

    row = Suggestion(
        item_id=item_id, stage_id=prompt.stage_id, kind=draft_kinds()[prompt.draft_kind].suggestion_kind, model=model,
        model_version=f"{prompt.draft_kind} v{prompt.version}", payload=payload, prompt_id=prompt.id, latency_ms=latency_ms,
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
    )
    session.add(row)
    session.flush()
    return row.id


def failed_draft(session: Session, prompt, item_id: int, reason: str, raw: str = "", *, latency_ms: int | None = None) -> None:
    from app.models import DraftFailure

    session.add(DraftFailure(prompt_id=prompt.id, item_id=item_id, reason=reason, raw=raw, model="tiny-vlm", latency_ms=latency_ms))
    session.flush()


def finished(session: Session, stage_id: int, item_id: int, payload: dict, *, discard: bool = False) -> None:
    """The item's final record in the stage, as consolidation writes one."""
    from app.models import ItemResult

    session.add(ItemResult(item_id=item_id, stage_id=stage_id, payload=payload, discard=discard, source="auto"))
    session.flush()


def item_ids(session: Session, project_id: int) -> list[int]:
    import sqlalchemy as sa

    from app.models import Item

    return list(session.scalars(sa.select(Item.id).where(Item.project_id == project_id).order_by(Item.id)))
