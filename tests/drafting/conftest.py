"""Drafting fixtures: a tiny random vision-language model (built once per session), a real
OpenAI-compatible fault server and a real `transformers serve` process (one each per module), and
a test-only draft kind on the generic dataset, so that these tests need no dataset's own kinds."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.datasets.draft import DraftKind
from app.datasets.generic.dataset import Generic
from app.db import transaction
from app.settings import Settings
from tests.conftest import free_port, make_choice_project, running
from tests.drafting.kinds import CHOICE_KIND, TEXT_ONLY_KIND
from tests.drafting.tinyvlm import save_tiny_vlm

KEY = "sk-test-4f9c2e71b0d84a6c"  # an API key that must never leave the request's header


@pytest.fixture
def draft_kinds(monkeypatch) -> tuple[DraftKind, DraftKind]:
    """The test kinds, declared by the generic dataset for this test."""
    monkeypatch.setattr(Generic, "drafts", (CHOICE_KIND, TEXT_ONLY_KIND))
    return CHOICE_KIND, TEXT_ONLY_KIND


def with_drafters(settings: Settings, folder: Path, **tables: dict[str, Any]) -> Settings:
    """Settings whose drafters file names these drafters."""
    lines = []
    for name, table in tables.items():
        lines.append(f"[drafters.{name}]")
        lines += [f"{key} = {json.dumps(str(value) if isinstance(value, Path) else value)}" for key, value in table.items()]
    path = folder / "drafters.toml"
    path.write_text("\n".join(lines) + "\n")
    return settings.model_copy(update={"drafters_file": path})


def choice_stage(sessions, settings, storage, n: int) -> tuple[int, list[int]]:
    """A generic.choice stage of n items (questions Q0..Q{n-1}, one image); returns (stage_id, item ids)."""
    import sqlalchemy as sa

    from app.models import Item

    _, stage_id = make_choice_project(sessions, settings, storage, n)
    with transaction(sessions) as s:
        return stage_id, list(s.scalars(sa.select(Item.id).where(Item.stage_id == stage_id).order_by(Item.id)))


def new_prompt(sessions, stage_id: int, drafter: str, kind: str = "test.choice", **changes) -> int:
    from app.services.drafting import prompts

    with transaction(sessions) as s:
        return prompts.new_version(s, stage_id, kind, drafter=drafter, **changes).id


# -- the tiny model and the servers ---------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory) -> Path:
    return save_tiny_vlm(tmp_path_factory.mktemp("models") / "tiny-vlm")


class StubServer:
    def __init__(self, base: str):
        self.base = base
        self.url = f"{base}/v1"

    def set(self, **control) -> None:
        self._call("/control", control)

    def requests(self) -> list[dict[str, Any]]:
        return self._call("/requests")

    def health(self) -> dict[str, Any]:
        return self._call("/health")

    def _call(self, path: str, payload=None):
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    """The fault-injecting OpenAI-compatible server (tests/drafting/stub_server.py), in its own process."""
    port = free_port()
    script = Path(__file__).with_name("stub_server.py")
    with running([sys.executable, str(script), "--port", str(port)], f"http://127.0.0.1:{port}/health"):
        yield StubServer(f"http://127.0.0.1:{port}")


@pytest.fixture
def fresh_stub(stub) -> StubServer:
    stub.set()
    return stub


@pytest.fixture(scope="module")
def vlm_server(tiny_vlm) -> Iterator[str]:
    """`transformers serve` on the tiny model, offline, on CPU; yields its /v1 base URL."""
    port = free_port()
    binary = Path(sys.executable).parent / "transformers"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [str(binary), "serve", str(tiny_vlm), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--default-seed", "0"]
    with running(cmd, f"http://127.0.0.1:{port}/health", env=env, timeout=120):
        yield f"http://127.0.0.1:{port}/v1"
