"""Single sign-on in Chromium: the login page's button, through a real OpenID provider process
(tests/sso_provider.py), back with the role and workspace the groups map to; once the provider drops
the group, the next sign-in is refused and the session still open elsewhere ends."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.main import create_app
from app.settings import Settings
from tests.conftest import serving
from tests.sso_provider import provider_process

GROUPS = {"curators": [{"role": "admin"}, {"workspace": "Default", "role": "manager"}], "annotators": {"workspace": "Default", "role": "annotator"}}


@pytest.fixture(scope="module")
def provider():
    with provider_process() as running:
        yield running


@pytest.fixture
def sso_server(settings, committed, provider):
    served = Settings(database_url=settings.database_url, data_dir=settings.data_dir, secret_key=settings.secret_key,
                      **provider.settings(oidc_groups=GROUPS))
    with serving(create_app(served)) as base:
        provider.configure(redirect_uris=[f"{base}/login/sso/callback"], claims={}, unpublished_key=False)
        yield base


def sign_in(browser, base: str):
    context = browser.get().new_context(base_url=base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto("/login?next=/admin/users")
    page.click("text=Sign in with Test ID")
    page.wait_for_load_state()
    return context, page


def test_sign_in_through_the_provider_then_refused_once_the_group_is_gone(browser, sso_server, provider, committed):
    provider.configure(user={"sub": "grace-1", "preferred_username": "grace", "email": "grace@example.org", "groups": ["curators", "staff"]})
    first, page = sign_in(browser, sso_server)
    try:
        page.wait_for_url(f"{sso_server}/admin/users")
        assert page.locator("h1").inner_text() == "Users"  # an admin's page: the mapped global role
        assert "grace (admin)" in page.locator("header").inner_text()
        with transaction(committed) as s:
            rows = s.execute(sa.text(
                "SELECT w.name, m.role, m.sso_managed FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id"
                " JOIN users u ON u.id = m.user_id WHERE u.username = 'grace'")).all()
        assert [tuple(r) for r in rows] == [("Default", "manager", True)]

        provider.configure(user={"sub": "grace-1", "preferred_username": "grace", "groups": ["staff"]})
        second, refused = sign_in(browser, sso_server)
        try:
            alert = refused.locator("[role=alert]")
            assert "not in any group that may use this vlcurate server" in alert.inner_text()
            assert refused.url.startswith(f"{sso_server}/login/sso/callback")
            assert refused.locator("input[name=password]").count() == 1  # passwords are on: the form is still there
        finally:
            browser.close_context(second)

        page.reload()  # the session that was open is ended by the refusal
        page.wait_for_url(f"{sso_server}/login?next=/admin/users")
        with transaction(committed) as s:
            assert s.scalar(sa.text("SELECT role FROM users WHERE username = 'grace'")) == "annotator"
            assert s.scalar(sa.text("SELECT count(*) FROM workspace_members m JOIN users u ON u.id = m.user_id WHERE u.username = 'grace'")) == 0
    finally:
        browser.close_context(first)
