"""Admin pages in Chromium: the API reference under the Content-Security-Policy, the favicon, new users."""

from __future__ import annotations

from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in

# Collects what the Content-Security-Policy refused; an init script runs before the page's own.
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def _watch(page) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {"console": [], "failed": []}
    page.add_init_script(WATCH_CSP)
    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("response", lambda r: seen["failed"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
    # A request cut short by the next navigation (the favicon, often) is not a missing file.
    page.on("requestfailed", lambda r: seen["failed"].append(f"failed {r.url}: {r.failure}") if "ERR_ABORTED" not in (r.failure or "") else None)
    return seen


def test_api_docs_render_the_operations_under_the_csp(page, tmp_path):
    seen = _watch(page)
    response = page.goto("/api/docs")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "unsafe-eval" not in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/projects" in [p.replace("\u200b", "") for p in paths]
    assert page.locator(".info .title").inner_text().startswith("vlcurate")
    assert page.locator("button.authorize").is_visible()  # the bearer-token scheme: calls can be tried
    # Open one operation: its parameters render too.
    page.locator(".opblock-summary-path", has_text="/api/v1/stages/{stage_id}/claim").first.click()
    page.wait_for_selector(".opblock.is-open .parameters, .opblock.is-open .opblock-description-wrapper")
    assert page.evaluate("window.__csp") == []
    assert [m for m in seen["console"] if "Content Security Policy" in m or m.startswith("error")] == []
    assert seen["failed"] == []
    page.screenshot(path=str(tmp_path / "api-docs.png"))
    # The watch itself works: an inline script is refused and reported.
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.body.append(s); }")
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__ran") is None


def test_pages_ask_for_no_missing_file_and_the_favicon_is_served(page, committed):
    make_user(committed, "boss", "admin")
    seen = _watch(page)
    icon = page.request.get("/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/x-icon" and icon.body()[:4] == b"\x00\x00\x01\x00"
    assert page.request.get("/static/favicon.svg").status == 200
    log_in(page, "boss", PASSWORD)
    for path in ("/", "/admin/users", "/admin/jobs", "/account/password"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.locator('link[rel="icon"]').get_attribute("href").startswith("/static/favicon.svg?v=")
    assert seen["failed"] == [] and page.evaluate("window.__csp") == []


def test_admin_pages_say_when_no_worker_is_running(page, committed):
    import sqlalchemy as sa

    from app.db import transaction

    make_user(committed, "boss", "admin")
    log_in(page, "boss", PASSWORD)
    notice = page.locator("#worker-notice .worker-notice")
    notice.wait_for()
    assert "No worker is running" in notice.inner_text() and "vlcurate worker" in notice.inner_text()
    page.goto("/admin/jobs")
    assert page.locator(".worker-notice").count() == 1  # the jobs page's own, live; not the layout's too

    with transaction(committed) as s:
        s.execute(sa.text("INSERT INTO procrastinate_workers DEFAULT VALUES"))
    page.wait_for_selector(".worker-alive")  # the jobs section refreshes itself
    assert page.locator(".worker-notice").count() == 0
    page.goto("/")
    page.wait_for_load_state("networkidle")
    assert page.locator(".worker-notice").count() == 0


def test_adding_a_user_in_the_browser_then_reloading_adds_nobody_twice(page, committed):
    import sqlalchemy as sa

    from app.db import transaction

    make_user(committed, "boss", "admin")
    log_in(page, "boss", PASSWORD)
    page.goto("/admin/users")
    page.fill("input[name=username]", "carol")
    page.select_option("form[action='/admin/users'] select[name=role]", "reviewer")
    page.keyboard.press("Enter")
    page.wait_for_selector("#one-time-password")
    assert page.url.endswith("/admin/users")
    password = page.locator("#one-time-password").inner_text()
    assert "User carol added (reviewer); one-time password: " + password in page.locator("#flash").inner_text()
    page.reload()
    assert page.locator("#one-time-password").count() == 0 and page.locator("#flash").count() == 0
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM users WHERE username = 'carol'")) == 1
    # The one-time password works once: carol must choose her own.
    page.context.clear_cookies()
    page.goto("/login")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", password)
    page.keyboard.press("Enter")
    page.wait_for_url("**/account/password")


def test_api_docs_try_a_call_with_a_token(page, committed):
    from tests.conftest import make_token

    token = make_token(committed, make_user(committed, "boss", "admin"))
    seen = _watch(page)
    page.goto("/api/docs")
    page.locator("button.authorize").click()
    page.locator(".auth-container input").fill(token)
    page.locator(".auth-btn-wrapper button.authorize").click()
    page.locator(".auth-btn-wrapper button.btn-done").click()
    operation = page.locator("#operations-api-list_projects_api_v1_projects_get")
    operation.locator(".opblock-summary-control").click()
    operation.locator("button.try-out__btn").click()
    operation.locator("button.execute").click()
    status = operation.locator(".live-responses-table tbody .response-col_status")
    status.wait_for()
    assert status.inner_text().strip() == "200"
    assert page.evaluate("window.__csp") == [] and seen["failed"] == []
