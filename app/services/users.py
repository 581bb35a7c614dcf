"""Users, login (throttled by app.services.login_throttle), passwords and API tokens."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import security
from app.errors import Conflict, Invalid, NotFound
from app.models import ApiToken, Role, User
from app.services import login_throttle
from app.services.audit import record

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
) -> User:
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
    return user


def add_user(session: Session, username: str, role: str, *, actor_id: int | None = None) -> tuple[User, str]:
    """A new user with a generated one-time password that they must change at first login;
    returns the user and the password, to be shown once and never stored in plain text."""
    password = security.new_password()
    return create_user(session, username, role, password, actor_id=actor_id, must_change_password=True), password


def reset_password(session: Session, user: User, *, actor_id: int | None = None) -> str:
    """Replace a user's password by a generated one-time password (their sessions end with it)."""
    password = security.new_password()
    user.password_hash = security.hash_password(password)
    user.must_change_password = True
    forget_tokens(session)
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
    forget_tokens(session)
    record(session, "user.password", actor_id=actor_id, target=f"user:{user.id}")


def update_user(
    session: Session, user: User, *, role: str | None = None, is_active: bool | None = None, actor_id: int
) -> None:
    if role is not None:
        user.role = parse_role(role).value
    if is_active is not None:
        user.is_active = is_active
    session.flush()
    forget_tokens(session)
    admins = session.scalar(
        sa.select(sa.func.count()).select_from(User).where(User.role == "admin", User.is_active)
    )
    if not admins:
        raise Conflict("At least one active admin must remain.")
    record(session, "user.update", actor_id=actor_id, target=f"user:{user.id}", role=user.role, active=user.is_active)


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
    refused = login_throttle.refusal(session, username, ip) if login_throttle.serialize(session, username, ip) else login_throttle.BUSY
    if refused is not None:
        record(session, "login.refused", target=username, ip=ip, scope=refused.scope, wait_seconds=round(refused.seconds, 1))
        return LoginOutcome(refused=refused)
    user = session.scalar(sa.select(User).where(User.username == username))
    ok = security.verify_password(user.password_hash if user else security.DUMMY_HASH, password)
    if user is None or not ok or not user.is_active:
        login_throttle.failed(session, username, ip, policy)
        record(session, "login.failed", target=username, ip=ip)
        return LoginOutcome()
    login_throttle.succeeded(session, username, ip)
    record(session, "login", actor_id=user.id, target=f"user:{user.id}", ip=ip)
    return LoginOutcome(user=user)


TOKEN_NAME_LENGTH = 100  # the column's width


def create_token(session: Session, user: User, name: str = "", *, actor_id: int | None = None) -> tuple[ApiToken, str]:
    if len(name) > TOKEN_NAME_LENGTH:
        raise Invalid(f"A token's name has at most {TOKEN_NAME_LENGTH} characters.")
    plain, digest = security.new_api_token()
    token = ApiToken(user_id=user.id, name=name, token_hash=digest)
    session.add(token)
    session.flush()
    record(session, "token.create", actor_id=actor_id, target=f"token:{token.id}", user_id=user.id)
    return token, plain


def revoke_token(session: Session, token_id: int, *, actor: User | None) -> None:
    """Users revoke their own tokens, admins any; `actor=None` is the command line (the operator)."""
    token = session.get(ApiToken, token_id)
    if token is None or (actor is not None and token.user_id != actor.id and actor.role != "admin"):
        raise NotFound(f"No token with id {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = datetime.now(timezone.utc)
        forget_tokens(session)
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


@dataclass(frozen=True)
class SessionOwner(TokenOwner):
    """Who a page session's user id is, with their password's fingerprint, which the session
    cookie must carry (changing the password ends every other session)."""

    fingerprint: str


def password_fingerprint(password_hash: str) -> str:
    """What a session cookie keeps of the password: changing the password ends every other session."""
    return hashlib.sha256(password_hash.encode()).hexdigest()[:16]


# Token -> owner and session user id -> user, cached per process so that an API call or a page costs no
# lookup. The bound: a revoked token, a deactivated user, a changed role or password takes effect at
# once in the process that made the change (forget_tokens), and within TOKEN_CACHE_SECONDS in every
# other process (other workers, the CLI).
TOKEN_CACHE_SECONDS = 5.0
_TOKEN_CACHE_SIZE = 10_000
_token_cache: dict[object, tuple[float, TokenOwner]] = {}
_token_lock = threading.Lock()
_token_generation = 0  # bumped by forget_tokens: a lookup that raced with it is not cached

_OWNER = sa.text(
    "SELECT u.id, u.username, u.role, u.must_change_password FROM api_tokens t JOIN users u ON u.id = t.user_id"
    " WHERE t.token_hash = :digest AND t.revoked_at IS NULL AND u.is_active"
)
_SESSION_OWNER = sa.text("SELECT id, username, role, must_change_password, password_hash FROM users WHERE id = :uid AND is_active")


def _cached(key: object, load: Callable[[], TokenOwner | None]) -> TokenOwner | None:
    now = time.monotonic()
    cached = _token_cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    generation = _token_generation
    owner = load()
    if owner is None:
        return None
    with _token_lock:
        if generation == _token_generation:
            if len(_token_cache) >= _TOKEN_CACHE_SIZE:
                _token_cache.clear()
            _token_cache[key] = (now + TOKEN_CACHE_SECONDS, owner)
    return owner


def token_owner(session: Session, token: str) -> TokenOwner | None:
    """The active user a live token belongs to, or None."""
    digest = security.hash_api_token(token)

    def load() -> TokenOwner | None:
        row = session.execute(_OWNER, {"digest": digest}).first()
        return None if row is None else TokenOwner(*row)

    return _cached(digest, load)


def session_owner(session: Session, user_id: int, fingerprint: object) -> SessionOwner | None:
    """The active user a page session names, if the password the session was made with (its
    `fingerprint`) is still theirs; else None. A cached user whose fingerprint differs is read again
    before the session is refused (the password may have changed back, or the id been reused in a
    database made anew), so only a change made within TOKEN_CACHE_SECONDS in another process is late."""
    key = (session.get_bind().engine.url, user_id)  # user ids repeat between databases (tokens do not)

    def load() -> SessionOwner | None:
        row = session.execute(_SESSION_OWNER, {"uid": user_id}).first()
        return None if row is None else SessionOwner(*row[:4], fingerprint=password_fingerprint(row[4]))

    owner = _cached(key, load)
    if owner is not None and owner.fingerprint != fingerprint:
        _token_cache.pop(key, None)
        owner = _cached(key, load)
    return owner if owner is not None and owner.fingerprint == fingerprint else None


def forget_tokens(session: Session | None = None) -> None:
    """Drop every cached token owner of this process (a revoke or a change to a user): now, and again
    when `session` commits, so that a request that read the old row meanwhile does not keep it."""
    global _token_generation
    with _token_lock:
        _token_generation += 1
        _token_cache.clear()
    if session is not None:
        session.info["forget_tokens"] = True


@sa.event.listens_for(Session, "after_commit")
def _forget_after_commit(session: Session) -> None:
    if session.info.pop("forget_tokens", False):
        forget_tokens()


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
