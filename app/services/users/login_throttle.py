"""Login throttling that slows the guesser, not the account's owner.

Failures are counted per (username, address) and, with a higher allowance, per address. Once an
allowance is used, each further failure doubles the wait before the next attempt from that address
(for that username), up to a ceiling; waits end on their own, so nobody is locked out for good. A
correct password from an address that has not been failing is never refused, whatever strangers did
elsewhere. The counts live in PostgreSQL, so every replica applies the same waits.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models import AuditEvent, LoginThrottle

# The username of an address's own row: real usernames have at least 2 characters.
ANY_USER = ""
NO_ADDRESS = ""


@dataclass(frozen=True)
class Policy:
    free_failures: int = 5
    address_free_failures: int = 100
    backoff_seconds: float = 1.0
    backoff_max_seconds: float = 900.0
    window_seconds: int = 3600

    @classmethod
    def of(cls, settings) -> "Policy":
        return cls(
            settings.login_max_failures,
            settings.login_address_max_failures,
            settings.login_backoff_seconds,
            settings.login_backoff_max_seconds,
            settings.login_window_seconds,
        )


def delay_after(failures: int, free: int, base: float, ceiling: float) -> float:
    """Seconds the next attempt waits after `failures` failures in a row: none within the allowance,
    then `base` doubled per further failure, never more than `ceiling`."""
    if failures < free:
        return 0.0
    return min(base * 2.0 ** min(failures - free, 64), ceiling)


def _now():
    # The clock, not the transaction's start (now()): a long transaction must still see waits end.
    return sa.func.clock_timestamp()


@dataclass(frozen=True)
class Refusal:
    seconds: float
    scope: str  # "account": this username from this address; "address": every login from the address


BUSY = Refusal(1.0, "busy")  # another attempt for this username from this address is being checked


def serialize(session: Session, username: str, address: str | None) -> bool:
    """One login attempt at a time per (username, address), on every replica, until the transaction
    ends: parallel guesses cannot all slip in before the first failure is counted. False when another
    attempt holds it: that one is refused at once rather than queued, so a flood of parallel guesses
    cannot hold every database connection of a replica while it waits."""
    return bool(session.scalar(
        sa.text("SELECT pg_try_advisory_xact_lock(4242002, hashtext(:key))"), {"key": f"{username}\n{address or NO_ADDRESS}"}
    ))


def refusal(session: Session, username: str, address: str | None) -> Refusal | None:
    """The wait still due for this username from this address, if any (the longer of the two scopes)."""
    left = sa.func.extract("epoch", LoginThrottle.blocked_until - _now())
    rows = session.execute(
        sa.select(LoginThrottle.username, left).where(
            LoginThrottle.address == (address or NO_ADDRESS),
            LoginThrottle.username.in_([username, ANY_USER]),
            LoginThrottle.blocked_until > _now(),
        )
    ).all()
    if not rows:
        return None
    name, seconds = max(rows, key=lambda r: r[1])
    return Refusal(float(seconds), "address" if name == ANY_USER else "account")


def admit(session: Session, username: str, address: str | None) -> Refusal | None:
    """Whether an attempt for this username from this address may check its password now: None if
    so (it then holds `serialize`'s lock until the transaction ends), else why not."""
    return refusal(session, username, address) if serialize(session, username, address) else BUSY


def _count_failure(session: Session, username: str, address: str, free: int, since, policy: Policy) -> None:
    """One more failure for the row; a count whose `since` column is a window old starts again."""
    stale = since < _now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, policy.window_seconds)
    stmt = insert(LoginThrottle).values(
        username=username, address=address, failures=1, first_failure_at=_now(), last_failure_at=_now()
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[LoginThrottle.username, LoginThrottle.address],
        set_={
            "failures": sa.case((stale, 1), else_=LoginThrottle.failures + 1),
            "first_failure_at": sa.case((stale, _now()), else_=LoginThrottle.first_failure_at),
            "last_failure_at": _now(),
        },
    ).returning(LoginThrottle.failures)
    failures = session.scalar(stmt)
    wait = delay_after(failures, free, policy.backoff_seconds, policy.backoff_max_seconds)
    session.execute(
        sa.update(LoginThrottle)
        .where(LoginThrottle.username == username, LoginThrottle.address == address)
        .values(blocked_until=_now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, wait) if wait else None)
    )


def failed(session: Session, username: str, address: str | None, policy: Policy) -> None:
    """Count a wrong password (or unknown or inactive user) against the pair and the address."""
    address = address or NO_ADDRESS
    # A guesser who keeps going never starts afresh: the pair's count lasts until a window passes
    # without a failure. An address's count starts again a window after its first failure, so an
    # office behind one NAT, where someone always mistypes, is not slowed down for ever.
    _count_failure(session, username, address, policy.free_failures, LoginThrottle.last_failure_at, policy)
    _count_failure(session, ANY_USER, address, policy.address_free_failures, LoginThrottle.first_failure_at, policy)
    # Rows nobody failed on for a window are worth nothing: drop them so the table stays small.
    session.execute(
        sa.delete(LoginThrottle).where(
            LoginThrottle.last_failure_at < _now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, policy.window_seconds),
            sa.or_(LoginThrottle.blocked_until.is_(None), LoginThrottle.blocked_until < _now()),
        )
    )


def succeeded(session: Session, username: str, address: str | None) -> None:
    """A correct password forgets this pair's failures. The address's own count stays: one known
    password must not buy an address fresh guesses at other accounts."""
    session.execute(
        sa.delete(LoginThrottle).where(LoginThrottle.username == username, LoginThrottle.address == (address or NO_ADDRESS))
    )


@dataclass(frozen=True)
class RecentFailures:
    failed: int
    refused: int
    addresses: int
    last_at: object


def recent_failures(session: Session, hours: int = 24) -> dict[str, RecentFailures]:
    """Per typed username, the failed and refused logins of the last `hours` hours (from the audit log)."""
    since = sa.func.now() - sa.func.make_interval(0, 0, 0, 0, hours)
    rows = session.execute(
        sa.select(
            AuditEvent.target,
            sa.func.count().filter(AuditEvent.action == "login.failed"),
            sa.func.count().filter(AuditEvent.action == "login.refused"),
            sa.func.count(sa.distinct(AuditEvent.ip)),
            sa.func.max(AuditEvent.at),
        )
        .where(AuditEvent.action.in_(["login.failed", "login.refused"]), AuditEvent.at >= since)
        .group_by(AuditEvent.target)
    ).all()
    return {r[0]: RecentFailures(r[1], r[2], r[3], r[4]) for r in rows}
