"""The attempts a worker holds: claimed, running or waiting to be finalized.

One :class:`RunningAttempt` per claimed attempt, from the claim until tf_finalize_and_claim
accepted or refused its outcome. The dispatcher adds and removes them (a turn's worth at a
time), the sync slots or the event loop run them, the renewals extend their leases;
:class:`AttemptTable` is the thread-safe set they share. Times are monotonic seconds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from ..handlers import Outcome, TaskContext

__all__ = ["AttemptTable", "RunningAttempt"]


@dataclass(eq=False, slots=True)
class RunningAttempt:
    """One attempt this worker owns.

    ctx:             what the handler sees (fencing token, cancel and lease flags).
    payload:         the task's payload as JSON text (decoded as part of the attempt; see execute.py).
    next_renew:      when (monotonic) its lease is next renewed.
    is_async:        its handler is ``async def``: it runs on the worker's event loop (aio.py).
    claimed_at:      when (monotonic) the claim's answer arrived: the database's deadline of the
                     attempt is no later than ``claimed_at + ctx.timeout_seconds``.
    outcome:         set when the handler ended; the attempt then waits to be finalized.
    send_after:      earliest time (monotonic) to send its finalize (again, after a busy or
                     failed try; or once its deadline has surely passed on the database's clock).
    finalize_tries:  finalize sends that came back busy or failed in transit.
    resent_after_loss: a finalize was sent again after a connection broke mid-call (its first
                     send may or may not have been applied).
    lease_lost:      a renewal said the lease is gone (renewals stop).
    busy_renewals:   renewals in a row that came back busy (the row was locked elsewhere).
    logged_at:       when (monotonic) a busy renewal or finalize was last logged.
    task:            the asyncio task running an async handler (event loop thread only).
    started:         its handler's turn has come: set by the slot thread before the sync
                     handler is prepared, or when the async handler's coroutine begins (on the
                     event loop); False while an attempt claimed ahead (--prefetch) waits.
    """

    ctx: TaskContext
    payload: str
    next_renew: float
    is_async: bool = False
    claimed_at: float = 0.0
    outcome: Outcome | None = None
    send_after: float = 0.0
    finalize_tries: int = 0
    resent_after_loss: bool = False
    lease_lost: bool = False
    busy_renewals: int = 0
    logged_at: float = 0.0
    task: asyncio.Task[None] | None = None
    started: bool = False

    @property
    def key(self) -> tuple[int, int]:
        """``(task_id, attempt_number)``: a worker that lost a lease may claim the next attempt of
        the same task while the old attempt's handler still runs, so the task id alone is not a key."""
        return (self.ctx.task_id, self.ctx.attempt_number)

    def describe(self) -> str:
        """``task 7 attempt 1 (type sleep)``, for log lines."""
        return f"task {self.ctx.task_id} attempt {self.ctx.attempt_number} (type {self.ctx.task_type})"


class AttemptTable:
    """Thread-safe ``(task_id, attempt_number) -> RunningAttempt``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[int, int], RunningAttempt] = {}

    def add(self, item: RunningAttempt) -> None:
        with self._lock:
            self._items[item.key] = item

    def add_many(self, items: Iterable[RunningAttempt]) -> None:
        """Add a turn's claims under one lock."""
        with self._lock:
            for item in items:
                self._items[(item.ctx.task_id, item.ctx.attempt_number)] = item

    def remove(self, item: RunningAttempt) -> None:
        with self._lock:
            if self._items.get(item.key) is item:
                del self._items[item.key]

    def remove_many(self, items: Iterable[RunningAttempt]) -> None:
        """Remove a turn's finalized attempts under one lock (each only if it is still the one held)."""
        with self._lock:
            held = self._items
            for item in items:
                key = (item.ctx.task_id, item.ctx.attempt_number)
                if held.get(key) is item:
                    del held[key]

    def get(self, key: tuple[int, int]) -> RunningAttempt | None:
        with self._lock:
            return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)  # one atomic read of the dict's size

    def snapshot(self) -> list[RunningAttempt]:
        """The attempts held now, as a list the caller may iterate without the lock."""
        with self._lock:
            return list(self._items.values())
