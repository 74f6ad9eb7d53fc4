"""Sign-in throttling through the app (Flask's test client, the session's database): a growing
delay after failed passwords and tokens, per client address and per account; 429 with
``Retry-After``; nothing checked while throttled; secrets compared as digests in constant time.
Time is the ``clock`` fixture (a FakeClock the tests move on): nothing sleeps."""

from __future__ import annotations

import hashlib
import hmac
import re
import types
from typing import Any

import pytest

from taskforge_console import auth

from console_support import BEARER, PASSWORD, TOKEN, FakeClock

CSRF_META = re.compile(r'name="csrf-token" content="([^"]+)"')
ACCOUNT_FREE = 5  # failures of an account (from any address) before its own delay starts
WRONG_BEARER = {"Authorization": "Bearer wrong-token-wrong-token"}


def _sign_in(client: Any, password: str, address: str = "127.0.0.1", **environ: str) -> Any:
    base = {"REMOTE_ADDR": address, **environ}
    match = CSRF_META.search(client.get("/signin", environ_base=base).get_data(as_text=True))
    assert match
    return client.post("/signin", data={"password": password, "csrf_token": match.group(1)}, environ_base=base)


def _signed_in(client: Any) -> bool:
    return bool(client.get("/api/tasks").status_code == 200)


@pytest.fixture()
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every secret the console compares, in order (auth._same, wrapped)."""
    seen: list[str] = []
    same = auth._same

    def spy(given: str, expected: str | None) -> bool:
        seen.append(given)
        return same(given, expected)

    monkeypatch.setattr(auth, "_same", spy)
    return seen


def test_wrong_passwords_get_429_with_a_growing_retry_after(token_app: Any, clock: FakeClock) -> None:
    client = token_app.test_client()
    for wait in (1, 2, 4, 8, 16, 32):
        wrong = _sign_in(client, "not the password")
        assert wrong.status_code == 401
        assert wrong.headers["Retry-After"] == str(wait)
        assert f"wrong password (the next attempt is taken in {wait} s)" in wrong.get_data(as_text=True)
        refused = _sign_in(client, "not the password either")
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == str(wait)
        page = refused.get_data(as_text=True)
        assert f'<p class="error" role="alert">Too many failed sign-ins: try again in {wait} s.</p>' in page
        assert '<form method="post">' in page  # the form is still there, to try again later
        clock.advance(wait - 0.5)
        assert _sign_in(client, PASSWORD).status_code == 429  # half a second early: still refused
        clock.advance(0.5)
    assert not _signed_in(client)


def test_the_right_password_while_throttled_is_refused_without_being_checked(
    token_app: Any, clock: FakeClock, checks: list[str]
) -> None:
    client = token_app.test_client()
    assert _sign_in(client, "guess 1").status_code == 401
    for _ in range(5):  # throttled attempts are not checked, and do not lengthen the wait
        refused = _sign_in(client, PASSWORD)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert checks == ["guess 1"]
    assert not _signed_in(client)

    clock.advance(1)
    signed = _sign_in(client, PASSWORD)
    assert signed.status_code == 302 and signed.headers["Location"] == "/"
    assert _signed_in(client)
    assert checks == ["guess 1", PASSWORD]

    # The success reset the counter: the next failure waits 1 s again, not 2.
    fresh = token_app.test_client()
    again = _sign_in(fresh, "guess 2")
    assert again.status_code == 401 and again.headers["Retry-After"] == "1"


def test_the_account_is_throttled_across_client_addresses(token_app: Any, clock: FakeClock, checks: list[str]) -> None:
    operator = token_app.test_client()
    assert _sign_in(operator, PASSWORD, "192.0.2.10").status_code == 302  # the operator's usual address

    attacker = token_app.test_client()
    for i in range(ACCOUNT_FREE):  # one guess per address: each address's first failure
        assert _sign_in(attacker, f"guess {i}", f"10.0.0.{i}").status_code == 401
    armed = _sign_in(attacker, "guess 5", "10.0.0.5")
    assert armed.status_code == 401  # the account's sixth failure starts the account's delay
    checked = len(checks)

    newcomer = token_app.test_client()
    refused = _sign_in(newcomer, PASSWORD, "198.51.100.20")  # a new address, the right password
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert _sign_in(newcomer, "guess 6", "198.51.100.21").status_code == 429
    assert len(checks) == checked, "nothing is checked while the account is throttled"

    # The account's delay grows more slowly than an address's: 1 s, 1.5 s, 2.25 s, 3.4 s ...
    waits = []
    for i in range(6, 10):
        clock.advance(float(_sign_in(attacker, "probe", f"10.0.1.{i}").headers["Retry-After"]))
        waits.append(_sign_in(attacker, f"guess {i}", f"10.0.1.{i}").headers["Retry-After"])
    assert waits == ["2", "3", "4", "6"]

    # The operator's known address is not held back by the account's delay, and its success
    # resets the account: the newcomer gets in too.
    assert _sign_in(operator, PASSWORD, "192.0.2.10").status_code == 302
    assert _sign_in(newcomer, PASSWORD, "198.51.100.20").status_code == 302


def test_bearer_token_failures_are_throttled_with_429_json(token_app: Any, clock: FakeClock, checks: list[str]) -> None:
    client = token_app.test_client()
    wrong = client.get("/api/tasks", headers=WRONG_BEARER)
    assert wrong.status_code == 401 and wrong.get_json()["code"] == "unauthorized"
    for path in ("/api/tasks", "/metrics", "/api/stats"):  # the right token, throttled: not checked
        refused = client.get(path, headers=BEARER)
        assert refused.status_code == 429, path
        assert refused.headers["Retry-After"] == "1"
        body = refused.get_json()
        assert body == {
            "code": "too_many_attempts",
            "message": "too many failed attempts from this address: try again in 1 s",
            "field": None,
        }
    action = client.post("/api/tasks", json={"task_type": "noop"}, headers=BEARER)
    assert action.status_code == 429 and action.get_json()["code"] == "too_many_attempts"
    page = client.get("/", headers=BEARER)  # a page asked with a bearer token: a page says it
    assert page.status_code == 429 and "try again in 1 s" in page.get_data(as_text=True)
    assert checks == ["wrong-token-wrong-token"]

    clock.advance(1)
    assert client.get("/api/tasks", headers=WRONG_BEARER).status_code == 401
    assert client.get("/metrics", headers=BEARER).headers["Retry-After"] == "2"
    clock.advance(2)
    assert client.get("/metrics", headers=BEARER).status_code == 200
    checked = len(checks)
    assert client.get("/healthz", headers=WRONG_BEARER).status_code == 200  # needs no token: not checked
    assert len(checks) == checked


def test_a_token_attack_from_many_addresses_leaves_known_api_clients_working(token_app: Any, clock: FakeClock) -> None:
    client = token_app.test_client()
    scraper = {"REMOTE_ADDR": "192.0.2.50"}
    assert client.get("/metrics", headers=BEARER, environ_base=scraper).status_code == 200
    for i in range(ACCOUNT_FREE + 1):
        assert (
            client.get("/api/tasks", headers=WRONG_BEARER, environ_base={"REMOTE_ADDR": f"10.0.0.{i}"}).status_code
            == 401
        )
    stranger = client.get("/api/tasks", headers=BEARER, environ_base={"REMOTE_ADDR": "198.51.100.1"})
    assert stranger.status_code == 429  # the token account is throttled for new addresses
    assert client.get("/metrics", headers=BEARER, environ_base=scraper).status_code == 200
    # The scraper's success does not reset the account (it would wipe what the attack cost).
    assert client.get("/api/tasks", headers=BEARER, environ_base={"REMOTE_ADDR": "198.51.100.1"}).status_code == 429


def test_with_no_password_the_sign_in_page_and_the_api_share_the_token_account(make_app: Any) -> None:
    client = make_app(token=TOKEN).test_client()
    for i in range(ACCOUNT_FREE + 1):
        address = f"10.0.0.{i}"
        if i % 2:
            assert _sign_in(client, "guess", address).status_code == 401
        else:
            assert (
                client.get("/api/tasks", headers=WRONG_BEARER, environ_base={"REMOTE_ADDR": address}).status_code == 401
            )
    assert _sign_in(client, TOKEN, "198.51.100.1").status_code == 429
    assert client.get("/api/tasks", headers=BEARER, environ_base={"REMOTE_ADDR": "198.51.100.2"}).status_code == 429


def test_ipv6_addresses_of_one_64_share_a_delay(token_app: Any) -> None:
    client = token_app.test_client()
    assert _sign_in(client, "guess", "2001:db8:0:1::1").status_code == 401
    assert _sign_in(client, PASSWORD, "2001:db8:0:1::2").status_code == 429  # same /64
    assert _sign_in(client, PASSWORD, "2001:db8:0:2::1").status_code == 302  # another /64


def test_behind_a_trusted_proxy_the_forwarded_address_is_throttled(make_app: Any) -> None:
    proxied = make_app(password=PASSWORD, proxy_hops=1).test_client()
    assert _sign_in(proxied, "guess", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 401
    assert _sign_in(proxied, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 429
    assert _sign_in(proxied, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 302

    direct = make_app(password=PASSWORD).test_client()  # no proxy trusted: the header means nothing
    assert _sign_in(direct, "guess", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 401
    assert _sign_in(direct, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 429


def test_secrets_are_compared_as_sha256_digests_with_compare_digest(
    token_app: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[bytes, bytes]] = []

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return hmac.compare_digest(a, b)

    # auth's own hmac only (Flask-WTF and itsdangerous compare with hmac.compare_digest too).
    monkeypatch.setattr(auth, "hmac", types.SimpleNamespace(compare_digest=spy))

    def digest(text: str) -> bytes:
        return hashlib.sha256(text.encode()).digest()

    client = token_app.test_client()
    assert _sign_in(client, "short").status_code == 401
    assert calls == [(digest("short"), digest(PASSWORD))]  # equal lengths: the secret's does not show
    clock.advance(1)
    assert client.get("/api/tasks", headers={"Authorization": "Bearer x"}).status_code == 401
    assert calls[1:] == [(digest("x"), digest(TOKEN))]
    clock.advance(2)
    assert client.get("/api/tasks", headers=BEARER).status_code == 200
    assert calls[2:] == [(digest(TOKEN), digest(TOKEN))]
    assert all(len(a) == len(b) == 32 for a, b in calls)
