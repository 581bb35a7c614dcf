"""Browser fixtures: real Chromium (Playwright) on a real uvicorn process (`live_server`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("VLCURATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture
def page(live_server):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"Chromium not found at {CHROMIUM}: run `make test` (it installs it) or set VLCURATE_CHROMIUM"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        pg.set_default_timeout(15000)
        yield pg
        context.close()
        browser.close()


def log_in(page, username: str, password: str) -> None:
    page.goto("/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.keyboard.press("Enter")
    page.wait_for_url("**/")


def log_in_by_keyboard(page, username: str, password: str) -> None:
    """The login form by keyboard only: the username field has the focus, Tab, Enter."""
    page.goto("/login")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url("**/")
