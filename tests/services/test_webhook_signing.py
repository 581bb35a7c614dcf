"""Standard Webhooks signing: the specification's published test vector, and what a receiver refuses."""

from __future__ import annotations

import base64

import pytest

from app.services.webhooks import signing

# The test vector of the Standard Webhooks reference libraries (standard-webhooks/standard-webhooks).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_specifications_test_vector_signs_as_published():
    assert signing.sign(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE
    received = {"webhook-id": SPEC_ID, "webhook-timestamp": str(SPEC_TIMESTAMP), "webhook-signature": SPEC_SIGNATURE}
    assert signing.verify(SPEC_SECRET, received, SPEC_BODY, now=SPEC_TIMESTAMP + 10) == SPEC_ID
    # A rotated secret: one of several space-separated signatures matching is enough.
    received["webhook-signature"] = "v1,AAAA" + SPEC_SIGNATURE[7:] + " " + SPEC_SIGNATURE
    assert signing.verify(SPEC_SECRET, received, SPEC_BODY, now=SPEC_TIMESTAMP) == SPEC_ID


def test_a_receiver_refuses_a_changed_body_a_stale_timestamp_and_missing_headers():
    received = signing.headers(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY)
    with pytest.raises(signing.BadSignature, match="no matching"):
        signing.verify(SPEC_SECRET, received, SPEC_BODY + b" ", now=SPEC_TIMESTAMP)
    with pytest.raises(signing.BadSignature, match="tolerance"):
        signing.verify(SPEC_SECRET, received, SPEC_BODY, now=SPEC_TIMESTAMP + 301)
    with pytest.raises(signing.BadSignature, match="missing"):
        signing.verify(SPEC_SECRET, {"webhook-id": SPEC_ID}, SPEC_BODY, now=SPEC_TIMESTAMP)


def test_new_secrets_are_prefixed_base64_of_32_random_bytes():
    a, b = signing.new_secret(), signing.new_secret()
    assert a != b and a.startswith("whsec_")
    assert len(base64.b64decode(a.removeprefix("whsec_"))) == 32
