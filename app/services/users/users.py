"""Users, login (throttled by app.services.users.login_throttle), passwords and API tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import security
from app.errors import Conflict, Invalid, NotFound
from app.models import ApiToken, Role, User
from app.services.users import login_throttle, web_sessions, workspace_admin
from app.services.users.audit import changes, record

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{2,64}$")


def parse_role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise Invalid(f"Unknown role '{role}': use annotator, reviewer or admin.") from None


def check_password_strength(password: str) -> None:
    if len(password) < security.MIN_PASSWORD_LENGTH:
        raise Invalid(f"The password must have at least {security.MIN_PASSWORD_LENGTH} characters.")


def create_user(
    session: Session,
    username: str,
    role: str,
    password: str,
    *,
    actor_id: int | None = None,
    must_change_password: bool = False,
    workspace_id: int | None = None,
    member_role: str | None = None,
) -> User:
    """A new user; they join `workspace_id` as `member_role` (default: their global role), or, with no
    workspace named, the default workspace with their global role (see workspace_admin.join)."""
    if not USERNAME_RE.match(username):
        raise Invalid("A username has 2 to 64 letters, digits, '.', '_' or '-'.")
    role_ = parse_role(role)
    check_password_strength(password)
    if session.scalar(sa.select(User.id).where(User.username == username)):
        raise Conflict(f"User '{username}' already exists.")
    user = User(
        username=username,
        role=role_.value,
        password_hash=security.hash_password(password),
        must_change_password=must_change_password,
    )
    session.add(user)
    session.flush()
    record(session, "user.create", actor_id=actor_id, target=f"user:{user.id}", role=role_.value)
    workspace_admin.join(session, user, workspace_id, member_role, actor_id=actor_id)
    return user


def add_user(session: Session, username: str, role: str, *, actor_id: int | None = None, workspace_id: int | None = None,
             member_role: str | None = None) -> tuple[User, str]:
    """A new user with a generated one-time password that they must change at first login;
    returns the user and the password, to be shown once and never stored in plain text."""
    password = security.new_password()
    made = create_user(session, username, role, password, actor_id=actor_id, must_change_password=True, workspace_id=workspace_id,
                       member_role=member_role)
    return made, password


def reset_password(session: Session, user: User, *, actor_id: int | None = None) -> str:
    """Replace a user's password by a generated one-time password (their sessions end with it)."""
    password = security.new_password()
    user.password_hash = security.hash_password(password)
    user.must_change_password = True
    web_sessions.end_all(session, user.id)
    record(session, "user.password_reset", actor_id=actor_id, target=f"user:{user.id}")
    return password


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound("No such user.")
    return user


def user_by_name(session: Session, username: str) -> User:
    user = session.scalar(sa.select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"No user named '{username}'.")
    return user


def list_users(session: Session) -> list[User]:
    return list(session.scalars(sa.select(User).order_by(User.username)))


def set_password(session: Session, user: User, password: str, *, actor_id: int | None = None) -> None:
    check_password_strength(password)
    user.password_hash = security.hash_password(password)
    user.must_change_password = False
    web_sessions.end_all(session, user.id)  # the page that changed it starts a new one
    record(session, "user.password", actor_id=actor_id, target=f"user:{user.id}")


def update_user(
    session: Session, user: User, *, role: str | None = None, is_active: bool | None = None, actor_id: int
) -> None:
    before = {"role": user.role, "active": user.is_active}
    if role is not None:
        user.role = parse_role(role).value
        workspace_admin.follow_role(session, user, before["role"], actor_id=actor_id)
    if is_active is not None:
        user.is_active = is_active
    session.flush()
    if not user.is_active:
        web_sessions.end_all(session, user.id)
    admins = session.scalar(
        sa.select(sa.func.count()).select_from(User).where(User.role == "admin", User.is_active)
    )
    if not admins:
        raise Conflict("At least one active admin must remain.")
    after = {"role": user.role, "active": user.is_active}
    if after != before:
        record(session, "user.update", actor_id=actor_id, target=f"user:{user.id}", **changes(before, after))


@dataclass(frozen=True)
class LoginOutcome:
    user: User | None = None
    refused: login_throttle.Refusal | None = None


def authenticate(
    session: Session, username: str, password: str, *, ip: str | None, policy: login_throttle.Policy
) -> LoginOutcome:
    """The user if the password is right, else a failure, or a refusal while this username from this
    address (or this address) still has to wait. A refused attempt checks no password, so a waiting
    guesser learns nothing, and it does not lengthen the wait. Every outcome is an audit event."""
    if not username:
        return LoginOutcome()  # no account has an empty name, and '' is the throttle's row of an address
    refused = login_throttle.admit(session, username, ip)
    if refused is not None:
        record(session, "login.refused", target=username, ip=ip, scope=refused.scope, wait_seconds=round(refused.seconds, 1))
        return LoginOutcome(refused=refused)
    user = session.scalar(sa.select(User).where(User.username == username))
    # A user without a password (made by single sign-on: no argon2 hash) takes as long to refuse as any other.
    stored = user.password_hash if user is not None and user.password_hash.startswith("$") else None
    ok = security.verify_password(stored or security.dummy_hash(), password) and stored is not None
    if user is None or not ok or not user.is_active:
        login_throttle.failed(session, username, ip, policy)
        record(session, "login.failed", target=username, ip=ip)
        return LoginOutcome()
    login_throttle.succeeded(session, username, ip)
    record(session, "login", actor_id=user.id, target=f"user:{user.id}", ip=ip)
    return LoginOutcome(user=user)


@dataclass(frozen=True)
class PasswordChange:
    """What came of a user's change of their own password: done, what is wrong, or a refusal."""

    error: str | None = None
    refused: login_throttle.Refusal | None = None


def change_own_password(
    session: Session, user: User, current: str, new: str, confirm: str, *, ip: str | None, policy: login_throttle.Policy
) -> PasswordChange:
    """Change the password after checking the current one, throttled as a login is (and counted with
    the login's failures for this username and address): a stolen session cannot guess the password
    behind it faster than the login page allows. The current password, one-time or not, cannot be
    kept as the new one. Ends every session of the user (the caller starts one for its own)."""
    refused = login_throttle.admit(session, user.username, ip)
    if refused is not None:
        record(session, "password.refused", actor_id=user.id, target=f"user:{user.id}", ip=ip, scope=refused.scope)
        return PasswordChange(refused=refused)
    if not security.verify_password(user.password_hash, current):
        login_throttle.failed(session, user.username, ip, policy)
        record(session, "password.failed", actor_id=user.id, target=f"user:{user.id}", ip=ip)
        return PasswordChange("The current password is wrong.")
    login_throttle.succeeded(session, user.username, ip)
    if new != confirm:
        return PasswordChange("The two new passwords differ.")
    if new == current:
        return PasswordChange("Choose a new password: the current one" + (", a one-time password," if user.must_change_password else "")
                              + " cannot be kept.")
    try:
        check_password_strength(new)
    except Invalid as exc:
        return PasswordChange(exc.message)
    set_password(session, user, new, actor_id=user.id)
    return PasswordChange()


TOKEN_NAME_LENGTH = 100  # the column's width


def create_token(session: Session, user: User, name: str = "", *, actor_id: int | None = None) -> tuple[ApiToken, str]:
    if len(name) > TOKEN_NAME_LENGTH:
        raise Invalid(f"A token's name has at most {TOKEN_NAME_LENGTH} characters.")
    plain, digest = security.new_api_token()
    token = ApiToken(user_id=user.id, name=name, token_hash=digest)
    session.add(token)
    session.flush()
    record(session, "token.create", actor_id=actor_id, target=f"token:{token.id}", user_id=user.id, name=name)
    return token, plain


def revoke_token(session: Session, token_id: int, *, actor: User | None) -> None:
    """Users revoke their own tokens, admins any; `actor=None` is the command line (the operator)."""
    token = session.get(ApiToken, token_id)
    if token is None or (actor is not None and token.user_id != actor.id and actor.role != "admin"):
        raise NotFound(f"No token with id {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = datetime.now(timezone.utc)
        record(session, "token.revoke", actor_id=actor.id if actor else None, target=f"token:{token.id}")


def list_tokens(session: Session, user_id: int | None = None) -> list[ApiToken]:
    q = sa.select(ApiToken).order_by(ApiToken.id.desc())
    if user_id is not None:
        q = q.where(ApiToken.user_id == user_id)
    return list(session.scalars(q))


@dataclass(frozen=True)
class TokenOwner:
    """Who an API token speaks for: what a request needs of the user, nothing the ORM tracks."""

    id: int
    username: str
    role: str
    must_change_password: bool


# One read through the token's unique index, joined to the user's row by primary key. Nothing is
# cached per process: a token revoked or a user deactivated by any process (another replica, the
# command line) is refused on the very next request everywhere.
_OWNER = sa.text(
    "SELECT u.id, u.username, u.role, u.must_change_password FROM api_tokens t JOIN users u ON u.id = t.user_id"
    " WHERE t.token_hash = :digest AND t.revoked_at IS NULL AND u.is_active"
)


def token_owner(session: Session, token: str) -> TokenOwner | None:
    """The active user a live token belongs to, or None."""
    row = session.execute(_OWNER, {"digest": security.hash_api_token(token)}).first()
    return None if row is None else TokenOwner(*row)


def ensure_first_admin(session: Session) -> tuple[str, str] | None:
    """On an empty database create `admin` with a one-time password; return (name, password) to print."""
    if session.scalar(sa.select(sa.func.count()).select_from(User)):
        return None
    # Serialize concurrent first starts of several replicas.
    session.execute(sa.text("SELECT pg_advisory_xact_lock(4242001)"))
    if session.scalar(sa.select(sa.func.count()).select_from(User)):
        return None
    password = security.new_password()
    create_user(session, "admin", "admin", password, must_change_password=True)
    return "admin", password
