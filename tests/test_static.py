"""Static files: every vendored asset comes with its licence, and no page loads anything from another site."""

from __future__ import annotations

import re

from app import ROOT

VENDOR = ROOT / "static" / "vendor"


def test_every_vendored_asset_has_its_licence():
    files = {p.name for p in VENDOR.iterdir()}
    assets = {n for n in files if n.endswith((".js", ".css"))}
    assert {"htmx-2.0.11.min.js", "pico-2.1.1.min.css", "swagger-ui-bundle-5.35.0.js", "swagger-ui-5.35.0.css"} <= assets
    for name in assets:
        project = name.split("-")[0] if not name.startswith("swagger-ui") else "swagger-ui"
        assert any(f.startswith(f"{project}-LICENSE") for f in files), f"{name} has no licence file in static/vendor"


def test_templates_load_nothing_from_another_site():
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        found = re.findall(r'<(?:script|link|img|iframe)[^>]+(?:src|href)="(?:https?:)?//', text)
        assert not found, f"{path.relative_to(ROOT)} loads from another site: {found}"
        # JSON data blocks are not run; anything else inline is refused by the CSP.
        inline = re.search(r"<script(?![^>]*\b(?:src=|type=\"application/(?:ld\+)?json\"))[^>]*>", text)
        assert not inline, f"{path.relative_to(ROOT)} has an inline script (the CSP refuses it)"


def test_pages_name_static_files_by_content_and_those_are_cached_for_good(client):
    from app.web.static_files import content_version

    page = client.get("/login").text
    urls = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert urls and all(re.fullmatch(r"/static/[\w./-]+\?v=[0-9a-f]{12}", u) for u in urls), urls
    app_js = next(u for u in urls if u.startswith("/static/js/app.js"))
    assert app_js.endswith(content_version("js/app.js"))
    fresh = client.get(app_js)
    assert fresh.status_code == 200 and fresh.headers["cache-control"] == "public, max-age=31536000, immutable"
    # Without the hash, or with another file's, the browser must ask again (a page from before a deploy).
    for stale in ("/static/js/app.js", "/static/js/app.js?v=000000000000"):
        r = client.get(stale)
        assert r.status_code == 200 and r.headers["cache-control"] == "no-cache" and r.content == fresh.content
    assert client.get("/static/js/nothing.js?v=000000000000").status_code == 404
