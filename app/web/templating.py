"""Jinja2 templates with named-block fragments (jinja2-fragments) and the shared page context."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from jinja2_fragments.fastapi import Jinja2Blocks
from markdown_it import MarkdownIt
from markupsafe import Markup

from app import ROOT, __version__
from app.web.deps import csrf_token

templates = Jinja2Blocks(directory=str(ROOT / "templates"))
# html=False: raw HTML in guidelines is shown as text, never run.
_markdown = MarkdownIt("commonmark", {"html": False})
templates.env.filters["markdown"] = lambda text: Markup(_markdown.render(text or ""))
templates.env.globals["version"] = __version__


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def render(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    block: str | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
):
    """Render a page, or only one of its named blocks. Pages that serve both say `Vary: HX-Request`."""
    ctx = {"user": getattr(request.state, "user", None), "csrf_token": csrf_token(request), **(context or {})}
    response = templates.TemplateResponse(
        request, name, ctx, status_code=status_code, headers=headers, block_name=block
    )
    response.headers["Vary"] = "HX-Request, Cookie"
    return response
