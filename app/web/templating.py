"""Jinja2 templates, the one `render` that answers a page or the fragment htmx asked for, and the shared page context."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fastapi import Request
from jinja2_fragments.fastapi import Jinja2Blocks
from markdown_it import MarkdownIt
from markupsafe import Markup

from app import ROOT, __version__
from app.errors import DomainError, size_text
from app.models import Role
from app.web import scope
from app.web.deps import csrf_token
from app.web.static_files import static_url

templates = Jinja2Blocks(directory=str(ROOT / "templates"))
# The templates ship with the code: checking each one's file time whenever it is looked up (a stat per
# template, include and base) buys nothing in a running server.
templates.env.auto_reload = False
# html=False: raw HTML in guidelines is shown as text, never run.
_markdown = MarkdownIt("commonmark", {"html": False})


@lru_cache(maxsize=256)
def markdown(text: str | None) -> Markup:
    """Markdown as HTML, kept for the texts seen last: a stage's guidelines are the same on every
    screen of the stage, and rendering them each time was a few percent of a screen's app time."""
    return Markup(_markdown.render(text or ""))


templates.env.filters["markdown"] = markdown
templates.env.filters["size"] = size_text
templates.env.globals["version"] = __version__
templates.env.globals["static_url"] = static_url


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


@lru_cache(maxsize=None)
def fragments(name: str) -> frozenset[str]:
    """The page's fragments: the named blocks it adds to the layout's (whose blocks are never fragments)."""
    layout = set(templates.env.get_template("base.html").blocks)
    return frozenset(set(templates.env.get_template(name).blocks) - layout)


def target_fragment(request: Request, name: str) -> str | None:
    """The block an htmx request asks for: its HX-Target is the id of an element that a block of the
    same name (`-` written `_`) renders, e.g. `<section id="progress">` in `{% block progress %}`."""
    target = request.headers.get("hx-target")
    if not target or not is_htmx(request):
        return None
    block = target.replace("-", "_")
    return block if block in fragments(name) else None


def render(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
    block: str | None = None,
):
    """Render page `name`, or only the fragment its htmx request targets (see `target_fragment`).
    `block` is for endpoints that answer with one fragment whoever asks (a live check)."""
    user = getattr(request.state, "user", None)
    ctx = {"user": user, "csrf_token": csrf_token(request), **_may(request, user), **(context or {})}
    response = templates.TemplateResponse(
        request, name, ctx, status_code=status_code, headers=headers,
        block_name=block or target_fragment(request, name),
    )
    # Caches must key on what chose the answer: the htmx headers, and the login behind the cookie.
    response.headers["Vary"] = "HX-Request, HX-Target, Cookie"
    return response


def _may(request: Request, user) -> dict[str, bool]:
    """Whether the page's user manages (`manages`) and reviews (`reviews`) what the page shows: a global
    admin or reviewer, or a member with that rank in the page's project (app.web.scope)."""
    if user is None:
        return {"manages": False, "reviews": False}
    return {"manages": scope.allows(request, user, Role.admin), "reviews": scope.allows(request, user, Role.reviewer)}


def render_error(request: Request, name: str, context: dict[str, Any], exc: DomainError, **extra):
    """Show page `name` again with the error (and what was posted, in `context`), with the error's status."""
    ctx = {**context, "error": exc.message, "errors": exc.errors, **extra}
    return render(request, name, ctx, status_code=exc.status_code)
