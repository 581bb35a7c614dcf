"""Web test fixtures: an admin and an annotator with API tokens."""

from __future__ import annotations

import pytest

from app.db import transaction
from tests import factories


@pytest.fixture
def api(client, app):
    with transaction(app.state.sessions) as s:
        return {"admin": factories.bearer(s, "boss", "admin"), "ann": factories.bearer(s, "ann")}
