"""Users, their roles, their API tokens and their page sessions."""

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class Role(StrEnum):
    annotator = "annotator"
    reviewer = "reviewer"
    admin = "admin"

    @property
    def rank(self) -> int:
        return ["annotator", "reviewer", "admin"].index(self.value)


class User(Base):
    __tablename__ = "users"
    __table_args__ = (sa.CheckConstraint("role IN ('annotator', 'reviewer', 'admin')", name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(sa.String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.Text)
    role: Mapped[str] = mapped_column(sa.String(16))
    is_active: Mapped[bool] = mapped_column(server_default=sa.true())
    must_change_password: Mapped[bool] = mapped_column(server_default=sa.false())
    created_at: Mapped[datetime] = created_at()


class UserIdentity(Base):
    """A user's account at an OpenID provider: (issuer, subject) names one person for good, whatever
    their email or username becomes, so a sign-in finds its user by this pair and nothing else."""

    __tablename__ = "user_identities"
    __table_args__ = (sa.UniqueConstraint("issuer", "subject", name="user_identities_issuer_subject"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    issuer: Mapped[str] = mapped_column(sa.Text)
    subject: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = created_at()
    last_login_at: Mapped[datetime | None]


class ApiToken(Base):
    """Bearer tokens for /api/v1. Only the sha256 of a token is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(sa.String(100), server_default="")
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created_at: Mapped[datetime] = created_at()
    revoked_at: Mapped[datetime | None]


class WebSession(Base):
    """A logged-in browser. The cookie holds a random key, this row only its sha256, so that ending a
    session (logout, a password change, deactivation) is deleting rows, which every replica sees on
    the session's next request."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)  # sha256 hex of the cookie's key
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = created_at()
    expires_at: Mapped[datetime]
    # A one-time notice for the session's next users page (a new password or API token): kept here
    # rather than in the cookie, and removed when shown.
    notice: Mapped[dict[str, Any] | None]


class LoginThrottle(Base):
    """Failed logins per (username, address) and per address (username ''), and until when the next
    attempt must wait. Kept in PostgreSQL so that every replica applies the same delay."""

    __tablename__ = "login_throttle"

    # Any text that was typed as a username, not only existing accounts: guessing names is throttled too.
    username: Mapped[str] = mapped_column(sa.Text, primary_key=True)
    address: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    failures: Mapped[int]
    first_failure_at: Mapped[datetime]
    last_failure_at: Mapped[datetime] = mapped_column(index=True)
    blocked_until: Mapped[datetime | None]
