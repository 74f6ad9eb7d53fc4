"""Sign-in throttling: a growing delay after failed attempts, per client address and per account.

After a failed check of a secret (the sign-in password, or the bearer token), further attempts
are refused for a delay that grows with each failure (:class:`Backoff`), both from the client
address that failed and, more slowly, for the account whose secret was guessed (an attacker who
rotates addresses is still slowed down). While refused, the secret is not checked at all, so a
refused guess tells nothing; and a refused attempt is not counted as a failure, so hammering a
throttled sign-in neither lengthens the wait nor can keep an account locked for ever: the delay
runs from the last *checked* failure and is capped. A success resets the address's counter
(and, for an interactive sign-in, the account's) and makes the address *known* for
:attr:`SignInThrottle.known_for` seconds: a known address is refused only by its own delay,
never by the account's, so an attack from elsewhere cannot lock out the operator's usual
addresses (or the API clients that used the token successfully).

State is kept in this process's memory, under one lock: each console process throttles on its
own. The tables are bounded: addresses at :attr:`SignInThrottle.max_addresses` (oldest failure
dropped first; entries whose last failure is :attr:`SignInThrottle.forget_after` seconds old are
dropped at once), known addresses at :attr:`SignInThrottle.max_known`, accounts are the few
names the console passes (``"password"``, ``"token"``).

Every time here is a reading of the injected clock (default :func:`time.monotonic`, seconds,
unaffected by changes of the wall clock); durations are seconds as ``float``.

Why not Flask-Limiter (or ``limits``): they count requests in fixed or moving windows (``N per
minute``), which is a rate limit, not a delay that grows with consecutive failures and resets on
success; see docs/console.md, "Sign-in throttling".
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ACCOUNT_BACKOFF",
    "ADDRESS_BACKOFF",
    "Attempt",
    "Backoff",
    "SignInThrottle",
    "client_key",
    "retry_after_header",
]

Clock = Callable[[], float]


@dataclass(frozen=True)
class Backoff:
    """How long attempts are refused after ``n`` consecutive failures (seconds).

    ``delay(n)`` is 0 for ``n <= free``, else ``min(first * factor ** (n - free - 1), cap)``:
    with ``first=1, factor=2`` that is 1 s, 2 s, 4 s, ... up to ``cap``."""

    first: float
    factor: float
    cap: float
    free: int = 0

    def __post_init__(self) -> None:
        if self.first <= 0 or self.factor < 1 or self.cap < self.first or self.free < 0:
            raise ValueError(f"Backoff needs first > 0, factor >= 1, cap >= first, free >= 0: {self}")

    def delay(self, failures: int) -> float:
        """Seconds to refuse attempts after ``failures`` consecutive failures (0 = none)."""
        steps = failures - self.free
        if steps <= 0:
            return 0.0
        # factor ** steps overflows float for huge counts: past the cap the answer is the cap.
        if self.factor > 1 and (steps - 1) * math.log(self.factor) >= math.log(self.cap / self.first):
            return self.cap
        return min(self.first * self.factor ** (steps - 1), self.cap)


#: Per client address: 1 s after the first failure, doubling, at most 15 minutes.
ADDRESS_BACKOFF = Backoff(first=1.0, factor=2.0, cap=900.0)
#: Per account (from any address): 5 failures free (typos of several people), then 1 s growing
#: by half each failure, at most 5 minutes: slower than per address, so the real operator coming
#: from a new address waits at most 5 minutes for a window even during an attack.
ACCOUNT_BACKOFF = Backoff(first=1.0, factor=1.5, cap=300.0, free=5)


@dataclass(frozen=True)
class Attempt:
    """The outcome of :meth:`SignInThrottle.attempt`.

    - ``checked``: the secret was compared (False: the attempt was throttled and refused).
    - ``ok``: it was checked and right.
    - ``retry_after``: seconds until this address may try again (throttled: the wait left;
      failed: the delay this failure started; ok: 0)."""

    checked: bool
    ok: bool
    retry_after: float

    @property
    def throttled(self) -> bool:
        """Refused without checking the secret."""
        return not self.checked


@dataclass
class _Failures:
    count: int
    last: float  # clock reading of the last checked failure
    until: float  # attempts are refused before this reading


def client_key(address: str | None) -> str:
    """The throttling key of a client address (``request.remote_addr``): an IPv4 address as
    is, an IPv4-mapped IPv6 address as its IPv4 address, any other IPv6 address as its ``/64``
    network (one site or host usually holds a whole /64, so rotating inside it gains nothing),
    ``"unknown"`` for ``None``; anything else (not an IP address), its first 100 characters."""
    if not address:
        return "unknown"
    try:
        parsed = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    except ValueError:
        return address[:100]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` value for a wait of ``seconds``: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))


class SignInThrottle:
    """Failure-driven delays per client address and per account, in process memory.

    Thread-safe (one lock; the secret's check runs under it, so two requests can never both
    slip through the same opening). Times come from ``clock`` (default :func:`time.monotonic`;
    seconds). ``max_addresses`` and ``max_known`` bound the memory (entries, at least 1 each);
    ``forget_after`` (seconds, more than either backoff's cap) is how long a failure is
    remembered; ``known_for`` (seconds) how long a successful address stays known.
    Raises :class:`ValueError` for bounds that cannot work."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        address_backoff: Backoff = ADDRESS_BACKOFF,
        account_backoff: Backoff = ACCOUNT_BACKOFF,
        max_addresses: int = 10_000,
        max_known: int = 1_000,
        forget_after: float = 3600.0,
        known_for: float = 7 * 86400.0,
    ) -> None:
        if max_addresses < 1 or max_known < 1:
            raise ValueError("max_addresses and max_known must be at least 1")
        if forget_after <= max(address_backoff.cap, account_backoff.cap):
            raise ValueError("forget_after must be longer than the backoffs' caps")
        self.clock = clock
        self.address_backoff = address_backoff
        self.account_backoff = account_backoff
        self.max_addresses = max_addresses
        self.max_known = max_known
        self.forget_after = forget_after
        self.known_for = known_for
        self._lock = threading.Lock()
        # Ordered by last failure (oldest first), so expired entries are at the front.
        self._addresses: OrderedDict[str, _Failures] = OrderedDict()
        self._accounts: dict[str, _Failures] = {}
        # Ordered by last success (oldest first).
        self._known: OrderedDict[str, float] = OrderedDict()

    def attempt(self, address: str, account: str, check: Callable[[], bool], *, reset_account: bool = True) -> Attempt:
        """Check a secret unless ``address`` (a :func:`client_key`) or ``account`` is throttled.

        ``check`` compares the secret (constant time) and runs only when neither delay is
        pending. A failure lengthens both delays; a success forgets the address's failures,
        makes the address known and, with ``reset_account`` (interactive sign-in), forgets the
        account's failures too (a bearer token's success does not: a monitoring scrape every
        few seconds would otherwise wipe what an attacker's failures cost)."""
        with self._lock:
            now = self.clock()
            wait = self._wait(address, account, now)
            if wait > 0:
                return Attempt(checked=False, ok=False, retry_after=wait)
            if check():
                self._addresses.pop(address, None)
                if reset_account:
                    self._accounts.pop(account, None)
                self._known.pop(address, None)
                self._known[address] = now
                while len(self._known) > self.max_known:
                    self._known.popitem(last=False)
                return Attempt(checked=True, ok=True, retry_after=0.0)
            self._fail_address(address, now)
            self._fail_account(account, now)
            return Attempt(checked=True, ok=False, retry_after=self._wait(address, account, now))

    def retry_after(self, address: str, account: str) -> float:
        """Seconds until ``address`` may try ``account`` again (0: now). Changes nothing."""
        with self._lock:
            return self._wait(address, account, self.clock())

    def __len__(self) -> int:
        """Entries held (addresses with failures + accounts with failures + known addresses)."""
        with self._lock:
            return len(self._addresses) + len(self._accounts) + len(self._known)

    # --- under the lock --------------------------------------------------------------------------
    def _wait(self, address: str, account: str, now: float) -> float:
        wait = 0.0
        record = self._addresses.get(address)
        if record is not None:
            wait = record.until - now
        known_at = self._known.get(address)
        if known_at is not None and now - known_at >= self.known_for:
            del self._known[address]
            known_at = None
        account_record = self._accounts.get(account)
        if account_record is not None and known_at is None:
            wait = max(wait, account_record.until - now)
        return max(wait, 0.0)

    def _fail_address(self, address: str, now: float) -> None:
        record = self._addresses.pop(address, None)
        if record is None or now - record.last >= self.forget_after:
            record = _Failures(count=0, last=now, until=now)
        record.count += 1
        record.last = now
        record.until = now + self.address_backoff.delay(record.count)
        self._addresses[address] = record  # at the end: the newest failure
        while self._addresses:
            oldest = next(iter(self._addresses.values()))
            if now - oldest.last < self.forget_after and len(self._addresses) <= self.max_addresses:
                break
            self._addresses.popitem(last=False)

    def _fail_account(self, account: str, now: float) -> None:
        record = self._accounts.get(account)
        if record is None or now - record.last >= self.forget_after:
            record = self._accounts[account] = _Failures(count=0, last=now, until=now)
        record.count += 1
        record.last = now
        record.until = now + self.account_backoff.delay(record.count)
