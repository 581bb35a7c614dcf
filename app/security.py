"""Password hashing (argon2), API token generation and hashing, CSRF token comparison."""

import hashlib
import hmac
import secrets
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
TOKEN_PREFIX = "vlc_"
MIN_PASSWORD_LENGTH = 8


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@lru_cache(maxsize=1)
def dummy_hash() -> str:
    """A hash to verify against for an unknown user, which keeps their login as slow as a known
    user's. Made once per process, when first asked (the server asks at start-up), not on import:
    hashing takes about 0.2 s of CPU, which every command of the command line would pay."""
    return hash_password(secrets.token_urlsafe(16))


def new_password() -> str:
    return secrets.token_urlsafe(12)


def new_api_token() -> tuple[str, str]:
    """Return (token to show once, sha256 hex to store)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, hash_api_token(token)


def hash_api_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def same_token(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(a, b)
