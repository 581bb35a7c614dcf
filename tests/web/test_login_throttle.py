"""Login throttling: a stranger's guesses slow down the stranger, never lock out the account's owner."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.models import AuditEvent, LoginThrottle
from app.services.users.login_throttle import Policy, delay_after
from app.settings import Settings
from app.web.addresses import client_address, parse_networks
from tests import factories
from tests.conftest import PASSWORD, login

ATTACKER, OWNER = ("203.0.113.7", 40000), ("198.51.100.9", 40000)


@pytest.fixture
def settings(settings):
    # Real doubling, short enough for a test to wait out.
    settings.login_backoff_seconds = 0.5
    settings.login_backoff_max_seconds = 1.0
    return settings


@pytest.fixture
def users(app):
    with transaction(app.state.sessions) as s:
        return {"ann": factories.user(s, "ann"), "rev": factories.user(s, "rev"), "boss": factories.user(s, "boss", "admin"),
                "token": factories.token(s, factories.user(s, "ann-bot"))}


def _from(app, address) -> TestClient:
    return TestClient(app, client=address)


def _events(app, action: str) -> list[AuditEvent]:
    with transaction(app.state.sessions) as s:
        return list(s.scalars(sa.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)))


def test_the_default_policy_in_numbers():
    s = Settings(_env_file=None)
    assert (s.login_max_failures, s.login_address_max_failures) == (5, 100)
    assert (s.login_backoff_seconds, s.login_backoff_max_seconds, s.login_window_seconds) == (1.0, 900.0, 3600)
    assert s.trusted_proxies == ""
    p = Policy()
    assert Policy.of(s) == p
    waits = [delay_after(n, p.free_failures, p.backoff_seconds, p.backoff_max_seconds) for n in range(1, 17)]
    assert waits == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]
    # The address allowance: an office behind one NAT fails 99 times in a row before anybody waits.
    assert delay_after(99, p.address_free_failures, 1.0, 900.0) == 0 and delay_after(100, p.address_free_failures, 1.0, 900.0) == 1
    assert delay_after(10_000, 5, 1.0, 900.0) == 900  # no overflow, the ceiling holds


def test_twenty_wrong_passwords_lock_out_neither_the_owner_nor_the_office(app, users):
    attacker, owner = _from(app, ATTACKER), _from(app, OWNER)
    statuses = [login(attacker, "ann", f"guess number {i}").status_code for i in range(20)]
    assert statuses[:3] == [401, 401, 401] and set(statuses) == {401, 429}  # 3 free failures, then waits
    # The owner, from an address that has not been failing, is let in at once.
    assert login(owner, "ann").status_code == 303
    # Another user behind the attacker's address (an office NAT) is not refused either.
    assert login(_from(app, ATTACKER), "rev").status_code == 303
    # API tokens never go through the login.
    assert attacker.get("/api/v1/projects", headers={"Authorization": f"Bearer {users['token']}"}).status_code == 200
    while (last := login(attacker, "ann", "one more guess")).status_code == 429:
        time.sleep(0.1)
    assert last.status_code == 401  # a fresh failure: the attacking address now waits a full second
    refused = login(attacker, "ann")
    assert refused.status_code == 429 and "Try again in 1 second" in refused.text
    wait = int(refused.headers["retry-after"])
    assert wait == 1
    time.sleep(wait)  # the backoff ends by itself: the right password from the attacking address then works
    assert login(attacker, "ann").status_code == 303
    refusals = _events(app, "login.refused")
    assert len(refusals) >= statuses.count(429) + 1
    assert {(e.target, e.ip, e.detail["scope"]) for e in refusals} == {("ann", ATTACKER[0], "account")}
    assert len(_events(app, "login.failed")) == statuses.count(401) + 1


def test_failures_across_usernames_from_one_address_slow_that_address_only(app, users, settings):
    settings.login_address_max_failures = 4
    sprayer = _from(app, ATTACKER)
    statuses = [login(sprayer, name, "password1").status_code for name in ("ann", "", "rev", "boss", "nobody", "ann")]
    assert statuses == [401, 401, 401, 401, 401, 429]  # an empty name is refused without counting
    refused = login(sprayer, "rev")
    assert refused.status_code == 429 and "from your address" in refused.text
    assert login(_from(app, OWNER), "rev").status_code == 303


def test_an_address_count_starts_again_a_window_after_its_first_failure(app, users, settings):
    settings.login_address_max_failures, settings.login_window_seconds = 3, 60
    office = _from(app, ATTACKER)
    assert [login(office, name, "mistyped!").status_code for name in ("ann", "rev", "boss", "ann")] == [401, 401, 401, 429]
    # A window later: every recorded time moves back 61 s instead of the test waiting a minute
    # (a wait as short as a busy machine's four argon2 checks would make the test depend on timing).
    with transaction(app.state.sessions) as s:
        back = sa.text("interval '61 seconds'")
        s.execute(sa.update(LoginThrottle).values(
            first_failure_at=LoginThrottle.first_failure_at - back, last_failure_at=LoginThrottle.last_failure_at - back,
            blocked_until=LoginThrottle.blocked_until - back))
    # A fresh window: three more failures before anybody from the office waits.
    assert [login(office, name, "mistyped!").status_code for name in ("rev", "boss")] == [401, 401]
    assert login(office, "ann").status_code == 303


def test_the_admin_users_page_shows_recent_failed_logins(app, users):
    attacker = _from(app, ATTACKER)
    for _ in range(4):
        login(attacker, "ann", "not it at all")
    admin = _from(app, OWNER)
    login(admin, "boss")
    page = admin.get("/admin/users").text
    row = page.split("<td>ann</td>", 1)[1].split("</tr>", 1)[0]
    assert "3 failed, 1 refused" in row and "from 1 address;" in row
    rev_row = page.split("<td>rev</td>", 1)[1].split("</tr>", 1)[0]
    assert "none" in rev_row


@pytest.mark.committed
def test_the_wait_holds_on_every_replica(settings, users):
    from app.main import create_app

    # A wait long enough to outlast a loaded machine's three password checks.
    settings = settings.model_copy(update={"login_backoff_seconds": 60.0, "login_backoff_max_seconds": 60.0})
    replica_a, replica_b = (TestClient(create_app(settings), client=ATTACKER) for _ in range(2))
    for _ in range(3):
        assert login(replica_a, "ann", "wrong password").status_code == 401
    assert login(replica_b, "ann", "wrong password").status_code == 429


def test_a_parallel_attempt_is_refused_at_once_not_queued(app, users, engine):
    """While one attempt for a username from an address is being checked, another is answered 429 at
    once instead of holding a database connection while it waits its turn."""
    with engine.connect() as holder:  # another replica's attempt, mid-check
        holder.execute(sa.text("SELECT pg_advisory_lock(4242002, hashtext(:key))"), {"key": f"ann\n{ATTACKER[0]}"})
        started = time.monotonic()
        r = login(_from(app, ATTACKER), "ann", "wrong password")
        assert r.status_code == 429 and r.headers["retry-after"] == "1" and time.monotonic() - started < 5
        assert "Another login for this account from your address is being checked" in r.text
        assert login(_from(app, OWNER), "ann", PASSWORD).status_code == 303  # another address: not held up
        holder.execute(sa.text("SELECT pg_advisory_unlock_all()"))
    assert login(_from(app, ATTACKER), "ann", PASSWORD).status_code == 303
    assert [e.detail.get("scope") for e in _events(app, "login.refused")] == ["busy"]


# -- whose address a request is counted against ----------------------------------------------------------

PROXIES = parse_networks("10.0.0.0/8, ::1")


@pytest.mark.parametrize(
    ("peer", "header", "expected"),
    [
        ("198.51.100.9", [], "198.51.100.9"),
        ("198.51.100.9", ["1.2.3.4"], "198.51.100.9"),  # not a trusted proxy: its header is ignored
        ("10.0.0.2", ["203.0.113.7"], "203.0.113.7"),
        ("10.0.0.2", ["6.6.6.6, 203.0.113.7, 10.0.0.5"], "203.0.113.7"),  # the leftmost was the client's own claim
        ("10.0.0.2", ["6.6.6.6", "203.0.113.7"], "203.0.113.7"),  # several headers are one list
        ("10.0.0.2", ["10.0.0.9, 10.0.0.5"], "10.0.0.9"),  # only proxies: the farthest one
        ("10.0.0.2", ["not-an-ip, 10.0.0.5"], "10.0.0.5"),  # garbage ends the walk
        ("10.0.0.2", [], "10.0.0.2"),
        ("::1", ["2001:db8::1"], "2001:db8::1"),
        ("testclient", ["1.2.3.4"], "testclient"),
        (None, ["1.2.3.4"], None),
    ],
)
def test_client_address(peer, header, expected):
    assert client_address(peer, header, PROXIES) == expected


def test_trusted_proxies_must_be_addresses():
    with pytest.raises(ValueError, match="'proxy.local' is not an address"):
        Settings(_env_file=None, trusted_proxies="10.0.0.1, proxy.local")


def test_forwarded_for_counts_only_behind_a_trusted_proxy(app, users, settings):
    settings.trusted_proxies = "10.0.0.0/8"
    via_proxy = TestClient(app, client=("10.1.2.3", 1000), headers={"X-Forwarded-For": "6.6.6.6, 203.0.113.7"})
    direct = TestClient(app, client=OWNER, headers={"X-Forwarded-For": "6.6.6.6"})
    login(via_proxy, "ann", "wrong password")
    login(direct, "ann", "wrong password")
    assert [e.ip for e in _events(app, "login.failed")] == ["203.0.113.7", OWNER[0]]
