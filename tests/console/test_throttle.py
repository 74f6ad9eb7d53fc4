"""The sign-in throttle on its own (taskforge_console.throttle): delays, what is checked, memory
bound, address keys. No database, no app; time is a FakeClock."""

from __future__ import annotations

import pytest

from taskforge_console.throttle import (
    ACCOUNT_BACKOFF,
    ADDRESS_BACKOFF,
    Backoff,
    SignInThrottle,
    client_key,
    retry_after_header,
)

from console_support import FakeClock


def test_address_delay_doubles_from_one_second_to_fifteen_minutes() -> None:
    delays = [ADDRESS_BACKOFF.delay(n) for n in range(0, 13)]
    assert delays == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]
    assert ADDRESS_BACKOFF.delay(10**9) == 900  # no overflow for absurd counts


def test_account_delay_grows_more_slowly_after_five_free_failures() -> None:
    delays = [ACCOUNT_BACKOFF.delay(n) for n in range(0, 9)]
    assert delays == [0, 0, 0, 0, 0, 0, 1, 1.5, 2.25]
    assert ACCOUNT_BACKOFF.delay(10**9) == 300
    assert all(ACCOUNT_BACKOFF.delay(n) <= ADDRESS_BACKOFF.delay(n) for n in range(0, 100))


@pytest.mark.parametrize("bad", [{"first": 0}, {"factor": 0.5}, {"cap": 0.5}, {"free": -1}])
def test_backoff_refuses_settings_that_cannot_work(bad: dict[str, float]) -> None:
    values: dict[str, float] = {"first": 1, "factor": 2, "cap": 10, "free": 0, **bad}
    with pytest.raises(ValueError, match="Backoff needs"):
        Backoff(first=values["first"], factor=values["factor"], cap=values["cap"], free=int(values["free"]))


def test_the_secret_is_not_checked_while_throttled_and_refusals_do_not_count() -> None:
    clock = FakeClock()
    throttle = SignInThrottle(clock=clock)
    checks: list[str] = []

    def check(result: bool) -> bool:
        checks.append("checked")
        return result

    first = throttle.attempt("198.51.100.1", "password", lambda: check(False))
    assert (first.checked, first.ok, first.retry_after) == (True, False, 1.0)
    for _ in range(50):  # hammering while throttled: never checked, the wait does not grow
        refused = throttle.attempt("198.51.100.1", "password", lambda: check(True))
        assert refused.throttled and not refused.ok and refused.retry_after == 1.0
    assert checks == ["checked"]
    clock.advance(0.4)
    assert throttle.retry_after("198.51.100.1", "password") == pytest.approx(0.6)
    clock.advance(0.6)
    assert throttle.attempt("198.51.100.1", "password", lambda: check(True)).ok
    assert checks == ["checked", "checked"]
    # The success forgot the failure: the next one starts again at 1 s.
    assert throttle.attempt("198.51.100.1", "password", lambda: check(False)).retry_after == 1.0


def test_memory_is_bounded_however_many_addresses_fail() -> None:
    clock = FakeClock()
    never = Backoff(first=1, factor=1, cap=1, free=10**9)  # no account delay: every failure is checked
    throttle = SignInThrottle(clock=clock, max_addresses=100, max_known=10, account_backoff=never)
    for i in range(5000):
        throttle.attempt(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", "password", lambda: False)
    assert len(throttle) == 100 + 1  # the newest 100 addresses and the one account
    assert throttle.retry_after("10.0.19.135", "password") > 0  # the newest is remembered (4999)
    for i in range(50):
        throttle.attempt(f"192.0.2.{i}", "password", lambda: True)
    assert len(throttle) == 100 + 10  # a success reset the account; the newest 10 known addresses
    # Failures older than forget_after are dropped as soon as a new failure comes.
    clock.advance(throttle.forget_after)
    throttle.attempt("203.0.113.9", "password", lambda: False)
    assert len(throttle) == 1 + 1 + 10


def test_a_known_address_is_not_refused_by_the_account_delay() -> None:
    clock = FakeClock()
    throttle = SignInThrottle(clock=clock, known_for=100)
    assert throttle.attempt("192.0.2.1", "token", lambda: True, reset_account=False).ok  # the operator's
    for i in range(10):  # an attacker rotating addresses
        clock.advance(throttle.retry_after(f"10.0.0.{i}", "token"))
        assert throttle.attempt(f"10.0.0.{i}", "token", lambda: False).checked
    assert throttle.retry_after("10.0.0.99", "token") > 0  # a new address waits for the account
    assert throttle.retry_after("192.0.2.1", "token") == 0  # the known one does not
    clock.advance(100)  # known_for has passed: the operator's address is a stranger again
    assert throttle.attempt("10.0.0.10", "token", lambda: False).checked
    assert throttle.retry_after("192.0.2.1", "token") == pytest.approx(ACCOUNT_BACKOFF.delay(11))


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("198.51.100.7", "198.51.100.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::ffff", "2001:db8:1:2::/64"),
        ("::ffff:198.51.100.7", "198.51.100.7"),
        ("fe80::1%eth0", "fe80::/64"),
        (None, "unknown"),
        ("", "unknown"),
        ("not-an-address" * 20, ("not-an-address" * 20)[:100]),
    ],
)
def test_client_key(address: str | None, key: str) -> None:
    assert client_key(address) == key


def test_retry_after_is_whole_seconds_rounded_up() -> None:
    assert [retry_after_header(s) for s in (0, 0.2, 1, 1.5, 2.25, 900)] == ["1", "1", "1", "2", "3", "900"]


def test_forget_after_must_outlast_the_caps() -> None:
    with pytest.raises(ValueError, match="forget_after"):
        SignInThrottle(forget_after=ADDRESS_BACKOFF.cap)
