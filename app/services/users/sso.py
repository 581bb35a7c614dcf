"""Single sign-on users: the user of an OpenID identity (found by issuer and subject, created at the
first sign-in), and the global role and workspace memberships their groups give, synced at every
sign-in. The provider's protocol is app.oidc's; this module gets its checked ID-token claims."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.errors import Conflict
from app.models import MemberRole, Role, User, UserIdentity, Workspace, WorkspaceMember
from app.services.users import web_sessions
from app.services.users.audit import record
from app.services.users.users import USERNAME_RE
from app.settings import Settings

log = logging.getLogger(__name__)

# The password hash of a user made by sign-on: not a hash at all, so no password ever matches it.
NO_PASSWORD = "!sso"
CREATE_TRIES = 5  # usernames tried when concurrent first sign-ins keep taking the chosen one
REFUSED = "Your account is not in any group that may use this vlcurate server. Ask your administrator to add you to one."


@dataclass(frozen=True)
class Entitlement:
    """What a user's groups give: a global role, and a role per workspace (by id), the highest of each."""

    role: Role
    workspaces: dict[int, MemberRole] = field(default_factory=dict)


@dataclass(frozen=True)
class SignIn:
    """The signed-in user, or why the sign-in is refused."""

    user: User | None = None
    refused: str | None = None


def groups_of(claims: dict[str, Any], claim: str) -> list[str]:
    """The group names in the claim (a list of strings, or one string); anything else counts as none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    return [g for g in value if isinstance(g, str)] if isinstance(value, list) else []


def entitlement(session: Session, settings: Settings, groups: list[str]) -> Entitlement | None:
    """What the groups give, or None when they give nothing (no mapped group, or only workspaces
    that do not exist: those are logged for the administrator)."""
    grants = [g for group in sorted(set(groups)) for g in settings.group_grants(group)]
    global_roles = [Role(g.role) for g in grants if g.workspace is None]
    named = {g.workspace for g in grants if g.workspace is not None}
    ids = {name: wid for name, wid in session.execute(sa.select(Workspace.name, Workspace.id).where(Workspace.name.in_(named)))} if named else {}
    for missing in sorted(named - set(ids)):
        log.warning("VLCURATE_OIDC_GROUPS names the workspace %r, which does not exist: its grants are skipped", missing)
    workspaces: dict[int, MemberRole] = {}
    for g in grants:
        if g.workspace in ids:
            role, wid = MemberRole(g.role), ids[g.workspace]
            if wid not in workspaces or role.rank > workspaces[wid].rank:
                workspaces[wid] = role
    if not global_roles and not workspaces:
        return None
    return Entitlement(max(global_roles, key=lambda r: r.rank, default=Role.annotator), workspaces)


def sign_in(session: Session, settings: Settings, claims: dict[str, Any], *, ip: str | None) -> SignIn:
    """The user of the identity in `claims`, with their roles and memberships synced from its groups;
    or a refusal (no user is created, and an existing one loses what their groups gave and their page
    sessions). Sign-ins of one identity run one at a time (a lock held to the end of the transaction)."""
    issuer, subject = claims["iss"], claims["sub"]
    session.execute(sa.text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 40))"), {"key": f"{issuer}\n{subject}"})
    identity = session.scalar(sa.select(UserIdentity).where(UserIdentity.issuer == issuer, UserIdentity.subject == subject))
    user = session.get(User, identity.user_id) if identity else None
    groups = groups_of(claims, settings.oidc_groups_claim)
    granted = entitlement(session, settings, groups)
    if granted is None or (user is not None and not user.is_active):
        if user is not None and granted is None:
            _take_away(session, user)
        why = "no mapped group" if granted is None else "account deactivated"
        record(session, "login.sso_refused", actor_id=user.id if user else None, target=f"user:{user.id}" if user else f"oidc:{subject}",
               ip=ip, issuer=issuer, groups=groups, reason=why)
        return SignIn(refused=REFUSED if granted is None else "Your vlcurate account is deactivated. Ask an administrator.")
    if user is None:
        user = _create(session, claims, granted.role)
        identity = UserIdentity(user_id=user.id, issuer=issuer, subject=subject)
        session.add(identity)
    _sync(session, user, granted)
    identity.last_login_at = sa.func.now()
    record(session, "login", actor_id=user.id, target=f"user:{user.id}", ip=ip, method="sso", issuer=issuer, groups=groups)
    return SignIn(user=user)


def _username(session: Session, claims: dict[str, Any]) -> str:
    """A free username from the identity's preferred name (or email's local part): a display name
    only, never what the account is matched by."""
    wanted = next((claims[k] for k in ("preferred_username", "email", "name") if isinstance(claims.get(k), str) and claims[k]), "user")
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", wanted.split("@")[0]).strip("-.")[:56] or "user"
    base = base if len(base) >= 2 else f"{base}-user"
    taken = set(session.scalars(sa.select(User.username).where(User.username.like(f"{base}%"))))
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    assert USERNAME_RE.match(name), name
    return name


def _create(session: Session, claims: dict[str, Any], role: Role) -> User:
    """A new user for the identity. Two first sign-ins (of different identities) with one preferred name
    may pick the same free username at once; the second to insert then tries the next free one."""
    for _ in range(CREATE_TRIES):
        user = User(username=_username(session, claims), role=role.value, password_hash=NO_PASSWORD)
        try:
            with session.begin_nested():
                session.add(user)
                session.flush()
        except IntegrityError:
            continue  # the name was taken meanwhile: the next statement sees it taken
        break
    else:
        raise Conflict("Could not find a free username for this sign-in; try again.")
    record(session, "user.create", target=f"user:{user.id}", role=role.value, via="sso", issuer=claims["iss"])
    return user


def _sso_memberships(session: Session, user_id: int) -> dict[int, WorkspaceMember]:
    rows = session.scalars(
        sa.select(WorkspaceMember).where(
            WorkspaceMember.user_id == user_id, WorkspaceMember.project_id.is_(None), WorkspaceMember.sso_managed
        )
    )
    return {m.workspace_id: m for m in rows}


def _sync(session: Session, user: User, granted: Entitlement) -> None:
    """Make the user's global role and sign-on memberships what `granted` says. A workspace where
    the user has a membership added by hand keeps it: sign-on adds none there."""
    if user.role != granted.role.value:
        record(session, "user.update", target=f"user:{user.id}", via="sso", before={"role": user.role}, after={"role": granted.role.value})
        user.role = granted.role.value
    held = _sso_memberships(session, user.id)
    by_hand = set(
        session.scalars(
            sa.select(WorkspaceMember.workspace_id).where(
                WorkspaceMember.user_id == user.id, WorkspaceMember.project_id.is_(None), ~WorkspaceMember.sso_managed
            )
        )
    )
    wanted = {wid: role for wid, role in granted.workspaces.items() if wid not in by_hand}
    for wid, member in held.items():
        if wid not in wanted:
            _remove(session, member)
        elif member.role != wanted[wid].value:
            record(session, "workspace.member.update", target=f"workspace:{wid}", user_id=user.id, via="sso",
                   before={"role": member.role}, after={"role": wanted[wid].value})
            member.role = wanted[wid].value
    for wid, role in wanted.items():
        if wid not in held:
            session.add(WorkspaceMember(workspace_id=wid, user_id=user.id, role=role.value, sso_managed=True))
            record(session, "workspace.member.add", target=f"workspace:{wid}", user_id=user.id, role=role.value, via="sso")
    session.flush()


def _remove(session: Session, member: WorkspaceMember) -> None:
    record(session, "workspace.member.remove", target=f"workspace:{member.workspace_id}", user_id=member.user_id,
           role=member.role, via="sso")
    session.delete(member)


def _take_away(session: Session, user: User) -> None:
    """What the groups gave, gone: the sign-on memberships, the global role down to annotator (the
    least), and the user's page sessions (API tokens stay; deactivate the user to stop them)."""
    for member in _sso_memberships(session, user.id).values():
        _remove(session, member)
    if user.role != Role.annotator.value:
        record(session, "user.update", target=f"user:{user.id}", via="sso", before={"role": user.role}, after={"role": Role.annotator.value})
        user.role = Role.annotator.value
    web_sessions.end_all(session, user.id)
    session.flush()
