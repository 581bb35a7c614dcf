"""Workspace scope of a request: the projects (or workspace) its path names, and the caller's rank in
them; what the caller sees nothing of answers 404, worded as for a missing row, so that no name leaks.

Read once per request, in one statement, and only for a route whose path names an object and a
caller who is no global admin. The annotation hot path (claims, submits, skips, drafts through the
API and the annotation pages' posts) checks membership inside the statements it runs anyway
(workspaces.member_sql), not here.
"""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.orm import Session

from app.db import INT4_MAX, INT8_MAX
from app.errors import NotFound, ascii_digits
from app.models import Role
from app.queue import NO_SUCH_ASSIGNMENT
from app.services.users import workspaces

# What a route answers for an id no row has: the same words for an id the caller may not see.
MISSING = {
    "project_id": "No project with id {}.",
    "stage_id": "No stage with id {}.",
    "item_id": "No item with id {}.",
    "assignment_id": NO_SUCH_ASSIGNMENT,
    "export_id": "No export with id {}.",
    "prompt_id": "No prompt {}.",
    "workspace_id": "No workspace with id {}.",
}
_WIDE = {"item_id": INT8_MAX, "assignment_id": INT8_MAX, "prompt_id": INT8_MAX}  # bigint ids


def _named(request: Request) -> dict[str, int]:
    """The ids the path names (one the route will refuse as malformed, 422, is left to it)."""
    named = {}
    for name in workspaces.NAMED:
        raw = request.path_params.get(name)
        if isinstance(raw, str) and ascii_digits(raw) and int(raw) <= _WIDE.get(name, INT4_MAX):
            named[name] = int(raw)
    return named


def check(request: Request, session: Session, user) -> None:
    """Answer 404 if the path names anything outside the caller's workspaces; keep their ranks in what
    it names for `allows`."""
    request.state.scope_ranks = {}
    if user.role == Role.admin:
        return
    named = _named(request)
    ranks = workspaces.ranks(session, user.id, named)
    for name, rank in ranks.items():
        if rank is None:
            raise NotFound(MISSING[name].format(named[name]))
    request.state.scope_ranks = ranks


def allows(request: Request, user, role: Role) -> bool:
    """Whether a route for `role` is open to the caller. A global admin: always. Anyone else needs
    that rank in every project (or workspace) the path names, a manager's for an admin route (which
    must then name one: users, tokens, jobs, audit and workspaces themselves stay admin's), and for
    annotating and reviewing, the global role too (the ceiling)."""
    if user.role == Role.admin:
        return True
    ranks = getattr(request.state, "scope_ranks", {})
    if role == Role.admin:
        return bool(ranks) and all(rank >= workspaces.MANAGER for rank in ranks.values())
    return user.at_least(role) and all(rank >= role.rank for rank in ranks.values())
