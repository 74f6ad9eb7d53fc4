"""Constants shared by the console tests (imported by bare name, like itest_support)."""

from __future__ import annotations

TOKEN = "test-token-" + "x" * 16
PASSWORD = "correct horse battery staple"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


class FakeClock:
    """A monotonic clock the test moves on by hand (seconds): the sign-in throttle's clock."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
