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
