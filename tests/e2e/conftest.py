"""Browser fixtures: real Chromium (Playwright) on a real uvicorn server (`live_server`)."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import pytest

from tests.conftest import PASSWORD

CHROMIUM = os.environ.get("VLCURATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


class Chromium:
    """The package's Chromium, launched again when it is gone. Closing a test's context has hung
    (once in a few full runs, on a loaded machine, in Chromium: the test itself had passed); a
    watchdog then kills the browser so that the close returns, the run goes on, and the next test
    gets a fresh browser."""

    CLOSE_WITHIN_S = 60

    def __init__(self, playwright):
        self.playwright, self.browser = playwright, None

    def get(self):
        if self.browser is None or not self.browser.is_connected():
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        return self.browser

    def close_context(self, context) -> None:
        from playwright.sync_api import Error

        watchdog = threading.Timer(self.CLOSE_WITHIN_S, self.kill)
        watchdog.start()
        try:
            context.close()
        except Error as exc:
            if watchdog.is_alive():
                raise
            warnings.warn(f"Chromium did not close a context within {self.CLOSE_WITHIN_S} s and was restarted: {str(exc).splitlines()[0]}")
        finally:
            watchdog.cancel()

    def kill(self) -> None:
        """Kill this process's Chromium (the browser process: its children go with it)."""
        import psutil

        for proc in psutil.Process().children(recursive=True):
            try:
                if "chrom" in proc.name() and "chrom" not in proc.parent().name():
                    proc.kill()
            except psutil.Error:
                pass


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the browser tests; each test gets a fresh context (cookies, storage, cache)."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"Chromium not found at {CHROMIUM}: run `make test` (it installs it) or set VLCURATE_CHROMIUM"
    with sync_playwright() as p:
        chromium = Chromium(p)
        chromium.get()
        yield chromium
        if chromium.browser.is_connected():
            chromium.browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.get().new_context(base_url=live_server, viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(15000)
    yield pg
    browser.close_context(context)


def shoot(page, name: str) -> None:
    """Keep what the annotator sees (the viewport, not the whole page) as SCREENSHOTS/name.png when
    VLCURATE_SCREENSHOTS names a folder: `bench/screenshots.py` collects one per annotation screen."""
    folder = os.environ.get("VLCURATE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def fits(page, *selectors: str, every: bool = False) -> None:
    """Each selector's first element (or with `every`, each of its elements) lies wholly inside the
    viewport as the page is now: seen without scrolling. Measured once the screen's images have
    loaded (a swapped-in screen's image is 0 wide until then); lazily loaded ones are not waited for."""
    page.wait_for_function("() => [...document.images].every(i => i.complete || i.loading === 'lazy')")
    height, width = page.viewport_size["height"], page.viewport_size["width"]
    for selector in selectors:
        found = page.locator(selector)
        boxes = [found.nth(k).bounding_box() for k in range(found.count())] if every else [found.first.bounding_box()]
        assert boxes and None not in boxes, f"{selector} is not shown"
        for box in boxes:
            assert box["x"] >= 0 and box["y"] >= 0, f"{selector} starts off screen: {box}"
            assert box["x"] + box["width"] <= width and box["y"] + box["height"] <= height, f"{selector} ends off screen: {box}"


def log_in(page, username: str, password: str) -> None:
    page.goto("/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.keyboard.press("Enter")
    page.wait_for_url("**/")


def log_in_by_keyboard(page, username: str, password: str) -> None:
    """The login form by keyboard only: the username field has the focus, Tab, Enter."""
    page.goto("/login")
    page.wait_for_selector("input[name=username]:focus")  # autofocus lands after load on a busy machine
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url("**/")


def start_stage(page, stage_id: int) -> None:
    """Open the stage as an annotator does: its page, then (unless it shows an item already held)
    its start button, which posts. Clicked, not a counted key: the dashboard's button is the same."""
    page.goto(f"/stages/{stage_id}/annotate")
    if "/assignments/" not in page.url:
        page.click(f'form[action="/stages/{stage_id}/annotate"] button')


def open_stage(page, username: str, stage_id: int) -> str:
    """Log in as `username` and open the stage's next item; returns the screen's URL."""
    log_in(page, username, PASSWORD)
    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    return page.url


def disagree(sessions, stage_id: int, answers: dict[str, str], items: int = 1) -> None:
    """Each named annotator answers `items` items of the stage with their choice (through the services)."""
    from app.db import transaction
    from app.services.annotation import annotation
    from tests.conftest import make_user

    for name, choice in answers.items():
        user = make_user(sessions, name)
        for n in range(items):
            with transaction(sessions) as s:
                claimed = annotation.claim(s, stage_id, user)
                annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, f"k-{name}-{n}")


class Keys:
    """Real key presses on a page, counted (Enter included): what an annotator spends on an item.
    Typed text is the annotator's content, counted apart; script errors on the page are collected."""

    def __init__(self, page):
        self.page, self.count, self.typed = page, 0, 0
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def press(self, *keys: str, times: int = 1) -> None:
        for key in keys:
            for _ in range(times):
                self.page.keyboard.press(key)
                self.count += 1

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)
        self.typed += len(text)
