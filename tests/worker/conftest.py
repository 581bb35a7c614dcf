"""Worker fixtures: a tiny CLIP saved once per test session."""

from __future__ import annotations

import pytest

from tests.worker.tiny_clip import save_tiny_clip


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory):
    return save_tiny_clip(tmp_path_factory.mktemp("models") / "tiny-clip")
