"""Submit-to-next-screen in real Chromium: the time from the key that submits an item to the next
item's screen being usable (its first control focused, the frame painted), on the demo data.

The page records the moment of the submitting key (sessionStorage survives the navigation) and
the first animation frame after the next screen's focus lands; the difference is what an
annotator waits. Prints p50/p95 per demo project against the 100 ms target. Uses DATABASE_URL
when set, else the embedded PostgreSQL, in a scratch database dropped afterwards.

    python bench/next_screen_bench.py [--items 25] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import sqlalchemy as sa
from scratch import BENCH_PASSWORD, p95, scratch_database

from app.db import session_factory, transaction  # noqa: E402
from app.models import Project, Stage  # noqa: E402
from app.services.demo.demo import load_demo  # noqa: E402
from app.services.users import users  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.storage import make_storage  # noqa: E402

PROBE = (Path(__file__).parent / "next_screen_probe.js").read_text()

# The key that answers an item in each timed demo stage (any valid answer will do).
ANSWERS = {"generic.choice": "1", "wikido.verify": "c"}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(url: str, data_dir, port: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": url, "VLCURATE_DATA_DIR": str(data_dir), "VLCURATE_SECRET_KEY": "bench-" + "x" * 40}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "vlcurate"), "serve", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start")


def time_stage(page, stage_id: int, key: str, items: int, think_ms: int) -> tuple[list[float], list[list[float]], int]:
    """Times `items` submits in the stage; returns the waits, their parts, and how many next screens
    were swapped into the page (the rest came as page loads)."""
    page.goto(f"/stages/{stage_id}/annotate")
    if "/assignments/" not in page.url and page.locator(f'form[action="/stages/{stage_id}/annotate"] button').count():
        page.click(f'form[action="/stages/{stage_id}/annotate"] button')  # the start button posts: a GET never leases
        page.wait_for_load_state()
    waits, parts, swaps = [], [], 0
    if "/assignments/" not in page.url:
        return waits, parts, swaps  # nothing to annotate in this stage (a finished demo project)
    for _ in range(items):
        page.wait_for_url("**/assignments/*")
        page.wait_for_function("() => document.activeElement && document.activeElement !== document.body")
        # An annotator looks at an item for a second or more: by then the next item's images,
        # named in the screen, have been fetched.
        page.wait_for_function("() => window.__ahead === true")
        page.wait_for_timeout(think_ms)
        # A swapped-in screen keeps the page's window: clear what the probe left there.
        page.evaluate("() => { delete window.__ahead; delete window.__waited; delete window.__swapped; }")
        url = page.url
        page.keyboard.press(key)
        page.keyboard.press("Enter")
        # The submit is answered with the next screen, which names its own address (or with the
        # stage's page when nothing is left).
        page.wait_for_url(lambda u, old=url: u != old and not u.endswith("/submit"))
        if "/assignments/" not in page.url:
            break
        page.wait_for_function("() => window.__waited !== undefined")
        waits.append(page.evaluate("window.__waited"))
        parts.append(page.evaluate("window.__parts"))
        swaps += page.evaluate("window.__swapped === true")
    return waits, parts, swaps


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=25, help="items timed per demo stage")
    parser.add_argument("--think-ms", type=int, default=300, help="time on each item once its screen is ready")
    parser.add_argument("--chromium", default=os.environ.get("VLCURATE_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    with scratch_database() as (url, tmp):
        rendered = url.render_as_string(hide_password=False)
        settings = Settings(database_url=rendered, data_dir=tmp / "data")
        sessions = session_factory(sa.create_engine(url))
        with transaction(sessions) as s:
            load_demo(s, settings, make_storage(settings))
            users.create_user(s, "bench", "annotator", BENCH_PASSWORD)
            stages = s.execute(sa.select(Project.name, Stage.id, Stage.workflow).join(Stage).where(Stage.overlap == 1)
                               .where(Stage.workflow.in_(ANSWERS)).order_by(Stage.id)).all()
        port = free_port()
        server = serve(rendered, settings.data_dir, port)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
                context = browser.new_context(base_url=f"http://127.0.0.1:{port}", viewport={"width": 1280, "height": 800})
                context.add_init_script(PROBE)
                page = context.new_page()
                page.goto("/login")
                page.fill("input[name=username]", "bench")
                page.fill("input[name=password]", BENCH_PASSWORD)
                page.keyboard.press("Enter")
                page.wait_for_url("**/")
                for name, stage_id, workflow in stages:
                    waits, parts, swaps = time_stage(page, stage_id, ANSWERS[workflow], args.items, args.think_ms)
                    if waits:
                        split = [statistics.median(p[k] for p in parts) for k in range(4)]
                        verdict = "met" if p95(waits) < 100 else "NOT met"
                        labels = (("key to request", "request to answer", "swap and set-up", "first frame") if swaps == len(waits)
                                  else ("submit and redirects", "screen response", "DOM ready", "images and first frame"))
                        print(f"{name} ({workflow}): {len(waits)} items ({swaps} swapped in), submit to next screen "
                              f"p50 {statistics.median(waits):.0f} ms, p95 {p95(waits):.0f} ms; target p95 < 100 ms: {verdict}\n"
                              "  median parts: " + ", ".join(f"{label} {v:.0f} ms" for label, v in zip(labels, split)))
                browser.close()
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
