"""Demo data: the demo accounts, and every dataset's demo projects (images drawn with Pillow, so demos run offline)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import security
from app.datasets import all_datasets
from app.datasets.dataset import DEMO_MODEL, DEMO_MODEL_VERSION, DemoProject
from app.models import Project, User
from app.services.demo import demo_quality
from app.services.drafting import suggestion_push
from app.services.imports import imports
from app.services.projects import projects
from app.services.users import users as users_service
from app.settings import Settings
from app.storage import Storage

DEMO_USERS = [("demo-admin", "admin"), ("alice", "annotator"), ("bob", "annotator"), ("rita", "reviewer")]


@dataclass
class DemoResult:
    accounts: list[tuple[str, str, str]]
    projects: list[str]


def ensure_project(session: Session, settings: Settings, storage: Storage, demo: DemoProject, folder: Path) -> bool:
    """Create and fill the demo project unless one of that name exists."""
    if session.scalar(sa.select(Project.id).where(Project.name == demo.name)):
        return False
    specs = [
        projects.StageSpec(workflow=s.workflow, name=s.name, guidelines=s.guidelines, config=dict(s.config), overlap=s.overlap)
        for s in demo.stages
    ]
    project = projects.create_project(session, demo.name, specs, description=demo.description)
    records = demo.records(folder)
    data = "\n".join(json.dumps(r) for r in records).encode()
    source = imports.ImageSource(settings, storage, base=folder)
    imports.import_items(session, project.id, data, "demo.jsonl", settings=settings, storage=storage, images=source)
    if demo.suggestions is not None:
        _store_suggestions(session, project.id, demo, records)
    return True


def _store_suggestions(session: Session, project_id: int, demo: DemoProject, records: list[dict]) -> None:
    """The demo's suggestions, pushed as a notebook's model run would be (a stage later in the
    pipeline gets them ahead of its items, as a push may). A worker with models then leaves
    these kinds alone: a suggestion of the kind exists."""
    stage_ids = {s.name: s.id for s in projects.stages_of(session, project_id)}
    rows: dict[int, list[dict]] = {}
    for sug in demo.suggestions(records):
        rows.setdefault(stage_ids[sug.stage], []).append({
            "external_id": sug.record_id, "kind": sug.kind, "model": DEMO_MODEL, "model_version": DEMO_MODEL_VERSION,
            "payload": sug.payload, "score": sug.score,
        })
    for stage_id, batch in rows.items():
        suggestion_push.push(session, stage_id, batch)


def load_demo(session: Session, settings: Settings, storage: Storage) -> DemoResult:
    """The demo accounts with new passwords, and the demo projects that are not there yet."""
    accounts = []
    for username, role in DEMO_USERS:
        password = security.new_password()
        user = session.scalar(sa.select(User).where(User.username == username))
        if user is None:
            users_service.create_user(session, username, role, password)
        else:
            users_service.set_password(session, user, password)
        accounts.append((username, role, password))

    created = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in all_datasets():
            for demo in dataset.demos:
                if ensure_project(session, settings, storage, demo, Path(tmp)):
                    created.append(demo.name)
        created += demo_quality.load(session, settings, storage, Path(tmp))
    return DemoResult(accounts=accounts, projects=created)
