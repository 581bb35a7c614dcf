"""Standard Webhooks signatures (https://www.standardwebhooks.com): secrets, the three headers, and verifying them.

Hand-written because the reference `standardwebhooks` package is not installable here (no network
at build time); the algorithm is small: `webhook-signature` is `v1,` + base64(HMAC-SHA256(key,
f"{id}.{timestamp}.{body}")), the key being the base64-decoded part of the `whsec_` secret. The
tests check it against the specification's published test vector.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
SECRET_BYTES = 32  # the specification asks for 24 to 64 random bytes
TOLERANCE_SECONDS = 5 * 60  # how far a receiver lets the timestamp stray from its clock


class BadSignature(ValueError):
    """A delivery whose headers do not verify: no match, missing headers or a stale timestamp."""


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def key_of(secret: str) -> bytes:
    """The HMAC key: the secret's base64 part decoded (a secret without the prefix is taken as base64)."""
    return base64.b64decode(secret.removeprefix(PREFIX), validate=True)


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value of one delivery attempt."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key_of(secret), signed, hashlib.sha256).digest()).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
        "content-type": "application/json",
    }


def verify(secret: str, received: dict[str, str], body: bytes, *, now: int, tolerance: int = TOLERANCE_SECONDS) -> str:
    """Check a delivery as a receiver does; its `webhook-id`, or BadSignature. `received` has lower-case names.
    The header may carry several space-separated signatures (a secret being rotated): one match suffices."""
    try:
        message_id, stamp, sent = received["webhook-id"], received["webhook-timestamp"], received["webhook-signature"]
        timestamp = int(stamp)
    except (KeyError, ValueError):
        raise BadSignature("missing or malformed webhook headers") from None
    if abs(now - timestamp) > tolerance:
        raise BadSignature("timestamp outside the tolerance")
    expected = sign(secret, message_id, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in sent.split()):
        raise BadSignature("no matching signature")
    return message_id
