"""Web test fixtures: an admin and an annotator with API tokens."""

from __future__ import annotations

import pytest

from tests.conftest import make_token, make_user


@pytest.fixture
def api(client, app):
    admin = make_user(app.state.sessions, "boss", "admin")
    ann = make_user(app.state.sessions, "ann", "annotator")
    return {
        "admin": {"Authorization": f"Bearer {make_token(app.state.sessions, admin)}"},
        "ann": {"Authorization": f"Bearer {make_token(app.state.sessions, ann)}"},
    }
