"""What a handler knows about the attempt it runs: :class:`TaskContext`.

One context per claimed attempt, made by the worker's dispatcher and handed to the handler
(``fn(payload, ctx)``, sync or ``async def``). The worker's renewer thread updates its flags
(:attr:`~TaskContext.cancel_requested`, :attr:`~TaskContext.lease_lost`,
:attr:`~TaskContext.timed_out`) while the handler runs, from another thread.

A context costs no lock or event until a handler waits on it: the flags are plain attributes
(one writer, the renewer; reads and writes of an attribute are atomic in CPython), the
``threading.Event`` behind :meth:`~TaskContext.sleep` is made on its first call, and the
futures behind :meth:`~TaskContext.async_sleep` exist only while a coroutine waits in it.
Times are seconds on this process's ``time.monotonic()`` clock (the default clock of asyncio
event loops too).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field

__all__ = ["TaskContext"]

#: Guards the lazy creation of a context's sleep event (two threads sleeping on one context).
_EVENT_LOCK = threading.Lock()


@dataclass(eq=False, slots=True)
class TaskContext:
    """What a handler knows about the attempt it runs.

    Attributes: ``task_id`` (int), ``attempt_number`` (int, 1-based), ``task_type``,
    ``queue``, ``priority`` (int), ``max_attempts`` (int), ``worker_id`` (str uuid),
    ``timeout_seconds`` (float seconds, or None: the task's attempt time limit) and
    ``deadline`` (the same limit on this process's ``time.monotonic()`` clock, taken from just
    before the claim, so never later than the database's deadline; None without a limit).
    :attr:`cancel_requested`, :attr:`lease_lost` and :attr:`timed_out` are updated by the
    worker's renewal loop (at each renewal, every lease/3 seconds) while the handler runs.
    A context is compared by identity: each attempt has its own.
    """

    task_id: int
    attempt_number: int
    task_type: str
    queue: str
    priority: int = 0
    max_attempts: int = 1
    worker_id: str | None = None
    timeout_seconds: float | None = None
    deadline: float | None = None
    _cancel_requested: bool = field(default=False, init=False, repr=False)
    _lease_lost: bool = field(default=False, init=False, repr=False)
    _timed_out: bool = field(default=False, init=False, repr=False)
    _event: threading.Event | None = field(default=None, init=False, repr=False)
    _waiters: set[asyncio.Future[bool]] | None = field(default=None, init=False, repr=False)

    @property
    def fencing_token(self) -> tuple[int, int]:
        """``(task_id, attempt_number)``: increases with every new attempt of a task.

        Give it to the destination of an external effect and have the destination refuse a
        write whose attempt_number is lower than one it has already accepted for that task:
        a worker that lost its lease then cannot overwrite the work of its replacement.
        """
        return (self.task_id, self.attempt_number)

    @property
    def cancel_requested(self) -> bool:
        """True once the renewal loop has learned that tf_cancel was called for this task."""
        return self._cancel_requested

    @property
    def lease_lost(self) -> bool:
        """True once a renewal came back ``renewed = false``: another attempt may run the task
        now, and tf_finalize will refuse this attempt's result. Stop as soon as convenient."""
        return self._lease_lost

    @property
    def timed_out(self) -> bool:
        """True once the attempt's deadline has passed (by :attr:`deadline` on the monotonic
        clock, or because a renewal was refused ``timed_out``). The database grants no lease
        past the deadline: a result offered after it is refused and the attempt is recorded
        ``timed_out`` (retried within the task's budget). Stop as soon as convenient."""
        if self._timed_out:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def seconds_left(self) -> float | None:
        """Seconds until :attr:`deadline` (monotonic clock; 0.0 once passed), or None without
        a time limit."""
        if self.deadline is None:
            return None
        return 0.0 if self._timed_out else max(0.0, self.deadline - time.monotonic())

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` (monotonic clock), returning early with True if a cancel is
        requested or the attempt's deadline passes first.

        Returns False when the full time elapsed. For sync handlers (it blocks the calling
        thread); an ``async def`` handler awaits :meth:`async_sleep` instead.
        """
        until = time.monotonic() + max(0.0, float(seconds))
        event = self._sleep_event()
        while True:
            if self.timed_out or self._cancel_requested:
                return True
            remaining = until - time.monotonic()
            if remaining <= 0:
                return False
            if self.deadline is not None:
                remaining = min(remaining, max(0.0, self.deadline - time.monotonic()) + 0.001)
            if event.wait(min(remaining, 0.5)):
                return True

    async def async_sleep(self, seconds: float) -> bool:
        """``await ctx.async_sleep(seconds)``: :meth:`sleep` for ``async def`` handlers.

        Waits ``seconds`` (the running event loop's clock, monotonic) and returns False, or
        returns True early when a cancel is requested or the attempt's deadline passes. On the
        worker's event loop the worker then also cancels the coroutine, but one loop iteration
        later: a handler that returns or raises right after this returned True ends the way it
        chose (e.g. ``TaskCancelled``); one that awaits anything else gets
        ``asyncio.CancelledError`` there. Raises ``asyncio.CancelledError`` when the coroutine is
        cancelled while it waits, like any await.
        """
        if self.timed_out or self._cancel_requested:
            return True
        loop = asyncio.get_running_loop()
        end, at_deadline = loop.time() + max(0.0, float(seconds)), False
        if self.deadline is not None and self.deadline < end:
            end, at_deadline = self.deadline, True
        waiter: asyncio.Future[bool] = loop.create_future()
        timer = loop.call_at(end, _resolve, waiter, at_deadline)
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = set()
        waiters.add(waiter)
        try:
            if self._cancel_requested or self._timed_out:  # marked while the waiter was being set up
                return True
            return await waiter
        finally:
            timer.cancel()
            waiters.discard(waiter)

    # Called by the worker's lease renewals (taskforge.worker.leases), not by handlers.
    def mark_cancel_requested(self) -> None:
        """Record that tf_cancel was called for the task (:attr:`cancel_requested` becomes True);
        wakes :meth:`sleep` and :meth:`async_sleep`. Any thread."""
        self._cancel_requested = True
        self.wake_sleepers()

    def mark_lease_lost(self) -> None:
        """Record that the lease is lost (:attr:`lease_lost` becomes True)."""
        self._lease_lost = True

    def mark_timed_out(self) -> None:
        """Record that the database refused a renewal because the deadline passed
        (:attr:`timed_out` becomes True); wakes :meth:`sleep` and :meth:`async_sleep`."""
        self._timed_out = True
        self.wake_sleepers()

    def wake_sleepers(self) -> None:
        """End every :meth:`sleep` and :meth:`async_sleep` now waiting on this context (they
        return True). Any thread: a waiter of an event loop running in this thread is resolved
        at once, others through their loop's ``call_soon_threadsafe``."""
        event = self._event
        if event is not None:
            event.set()
        waiters = self._waiters
        if not waiters:
            return
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for waiter in list(waiters):
            loop = waiter.get_loop()
            if loop is here:
                _resolve(waiter, True)
            else:
                with contextlib.suppress(RuntimeError):  # that loop is closed: nothing waits there now
                    loop.call_soon_threadsafe(_resolve, waiter, True)

    def _sleep_event(self) -> threading.Event:
        event = self._event
        if event is None:
            with _EVENT_LOCK:
                event = self._event
                if event is None:
                    event = self._event = threading.Event()
        return event


def _resolve(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)
