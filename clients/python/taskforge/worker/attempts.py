"""The attempts a worker holds: claimed, running or waiting to be finalized.

One :class:`RunningAttempt` per claimed attempt, from the claim until tf_finalize_and_claim
accepted or refused its outcome. The dispatcher adds and removes them, the slots run them, the
renewals extend their leases; :class:`AttemptTable` is the thread-safe set they share. Times are
monotonic seconds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..handlers import Outcome, TaskContext

__all__ = ["AttemptTable", "RunningAttempt"]


@dataclass(eq=False)
class RunningAttempt:
    """One attempt this worker owns.

    ctx:             what the handler sees (fencing token, cancel and lease flags).
    payload:         the task's payload as JSON text (the slot decodes it; see execute.py).
    next_renew:      when (monotonic) its lease is next renewed.
    outcome:         set by the slot when the handler ended; the attempt then waits to be finalized.
    send_after:      earliest time (monotonic) to send its finalize again after a busy or failed try.
    finalize_tries:  finalize sends that came back busy or failed in transit.
    resent_after_loss: a finalize was sent again after a connection broke mid-call (its first
                     send may or may not have been applied).
    lease_lost:      a renewal said the lease is gone (renewals stop).
    busy_renewals:   renewals in a row that came back busy (the row was locked elsewhere).
    logged_at:       when (monotonic) a busy renewal or finalize was last logged.
    """

    ctx: TaskContext
    payload: str
    next_renew: float
    outcome: Outcome | None = None
    send_after: float = 0.0
    finalize_tries: int = 0
    resent_after_loss: bool = False
    lease_lost: bool = False
    busy_renewals: int = 0
    logged_at: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        """``(task_id, attempt_number)``: a worker that lost a lease may claim the next attempt of
        the same task while the old attempt's handler still runs, so the task id alone is not a key."""
        return (self.ctx.task_id, self.ctx.attempt_number)


class AttemptTable:
    """Thread-safe ``(task_id, attempt_number) -> RunningAttempt``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[int, int], RunningAttempt] = {}

    def add(self, item: RunningAttempt) -> None:
        with self._lock:
            self._items[item.key] = item

    def remove(self, item: RunningAttempt) -> None:
        with self._lock:
            if self._items.get(item.key) is item:
                del self._items[item.key]

    def get(self, key: tuple[int, int]) -> RunningAttempt | None:
        with self._lock:
            return self._items.get(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def snapshot(self) -> list[RunningAttempt]:
        """The attempts held now, as a list the caller may iterate without the lock."""
        with self._lock:
            return list(self._items.values())
