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

:meth:`TaskContext.transaction` runs a handler's own database writes and the attempt's success in
one transaction (docs/worker.md, "Finalizing in the handler's transaction"): the worker that made
the context gives it a :class:`TransactionSource` (its connection pools); a context made
without one (a test calling a handler directly) raises RuntimeError there.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    import psycopg

__all__ = ["AttemptTransaction", "FinalizeNotAccepted", "TaskContext", "TransactionSource", "TransactionVerdict"]

#: Guards the lazy creation of a context's sleep event (two threads sleeping on one context).
_EVENT_LOCK = threading.Lock()


class TransactionVerdict(NamedTuple):
    """tf_finalize's answer to the success that :meth:`TaskContext.transaction` sent.

    ``accepted``: the success committed with the handler's writes (``task_state`` is then
    ``SUCCEEDED``); else the guard refused it with ``reason`` (``not_running``,
    ``stale_attempt``, ``not_owner``, ``timed_out``, ``lease_expired``) and everything rolled
    back (``task_state``: the task's state as the database saw it). ``result``: the result sent,
    as JSON text (None for none).
    """

    accepted: bool
    task_state: str
    reason: str | None
    result: str | None


class FinalizeNotAccepted(Exception):
    """Raised at the end of a :meth:`TaskContext.transaction` block when tf_finalize refused the
    attempt's success (``reason``: ``lease_expired``, ``timed_out``, ``not_running``,
    ``stale_attempt`` or ``not_owner``; ``task_state``: the task's state then). The transaction
    was rolled back: none of the block's writes happened. The attempt is over (another attempt
    may run the task, or recovery records this one); the worker sends nothing more for it."""

    def __init__(self, reason: str | None, task_state: str | None) -> None:
        self.reason = reason
        self.task_state = task_state
        super().__init__(
            f"tf_finalize did not accept this attempt's success ({reason}; task is {task_state}): "
            "the transaction was rolled back"
        )


class AttemptTransaction(Protocol):
    """What :meth:`TaskContext.transaction` returns: a context manager for sync handlers
    (``with``, a psycopg ``Connection``) and for ``async def`` ones (``async with``, a psycopg
    ``AsyncConnection``)."""

    def __enter__(self) -> psycopg.Connection[Any]: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def __aenter__(self) -> psycopg.AsyncConnection[Any]: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class TransactionSource(Protocol):
    """Makes the transactions of :meth:`TaskContext.transaction` (the worker's connection pools,
    ``taskforge.worker.transaction.TransactionPools``)."""

    def transaction(self, ctx: TaskContext) -> AttemptTransaction: ...

    def parent_results(self, ctx: TaskContext) -> dict[int, Any]: ...

    async def aparent_results(self, ctx: TaskContext) -> dict[int, Any]: ...


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
    ``transactions``: what :meth:`transaction` takes its connections from (set by the worker).
    ``traceparent``: the W3C trace context stored with the task at submit, or None (the worker
    links the attempt's span to it: taskforge.tracing).
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
    transactions: TransactionSource | None = field(default=None, repr=False)
    traceparent: str | None = None
    _cancel_requested: bool = field(default=False, init=False, repr=False)
    _lease_lost: bool = field(default=False, init=False, repr=False)
    _timed_out: bool = field(default=False, init=False, repr=False)
    _event: threading.Event | None = field(default=None, init=False, repr=False)
    _waiters: set[asyncio.Future[bool]] | None = field(default=None, init=False, repr=False)
    _result: Any = field(default=None, init=False, repr=False)
    _verdict: TransactionVerdict | None = field(default=None, init=False, repr=False)
    _parent_results: dict[int, Any] | None = field(default=None, init=False, repr=False)

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

    @property
    def parent_results(self) -> Mapping[int, Any]:
        """The results of this task's parents (``depends_on``, docs/workflows.md): a read-only
        mapping from parent task id to its result (every parent SUCCEEDED before the task could
        start), empty for a task without parents.

        Read once, on first access, through ``tf_parent_results`` with this attempt's fencing
        token, on a connection of the worker's pool (the one :meth:`transaction` uses), then kept.
        That first access waits for one query: in an ``async def`` handler call
        ``await ctx.load_parent_results()`` first. Raises :class:`taskforge.errors.Refused`
        (TF409) when the attempt no longer holds the task (lease lost), RuntimeError for a
        context not made by a worker.
        """
        if self._parent_results is None:
            self._parent_results = self._source("ctx.parent_results").parent_results(self)
        return MappingProxyType(self._parent_results)

    async def load_parent_results(self) -> Mapping[int, Any]:
        """:attr:`parent_results` for ``async def`` handlers: reads them (once) without blocking
        the event loop, and returns them."""
        if self._parent_results is None:
            self._parent_results = await self._source("ctx.load_parent_results()").aparent_results(self)
        return MappingProxyType(self._parent_results)

    def _source(self, what: str) -> TransactionSource:
        if self.transactions is None:
            raise RuntimeError(f"{what} needs a context made by a worker: this one has no database connections")
        return self.transactions

    def transaction(self) -> AttemptTransaction:
        """The attempt's own transaction: the handler's writes and the attempt's success commit
        together, or not at all (River's ``JobCompleteTx``).

        ``with ctx.transaction() as conn:`` (sync handlers; ``conn`` is a psycopg
        ``Connection``) or ``async with ctx.transaction() as aconn:`` (``async def`` handlers; a
        psycopg ``AsyncConnection``) opens a transaction on a connection of the worker's own pool
        (the worker's DSN and role). When the block ends without an exception, the worker calls
        ``tf_finalize`` with this attempt's fencing token (``task_id``, ``worker_id``,
        ``attempt_number``), outcome ``succeeded`` and the result given to :meth:`set_result`,
        inside that transaction, and commits: the task is SUCCEEDED if and only if the block's
        writes committed. Then :attr:`committed` is True, the worker sends no other outcome for
        the attempt (the handler's return value is not stored), and the handler should return.

        Errors, all raised at the end of the block after a rollback (none of its writes
        happened): :class:`FinalizeNotAccepted` when the guard refuses the success (lease lost,
        deadline passed, another attempt took the task); :class:`taskforge.handlers.ResultError`
        when the result cannot be stored; ``RetryableError`` when the connection failed in
        ``tf_finalize`` or ``COMMIT`` (the attempt is then finalized as usual; whether a COMMIT
        cut off in flight applied is decided by ``tf_finalize``'s guard, which refuses a second
        outcome). An exception raised inside the block rolls it back and goes on unchanged.
        RuntimeError when the context was not made by a worker, when a transaction of this
        attempt is already open, when the attempt was already finalized this way, and for
        ``with`` on a running event loop (use ``async with``). Waits at most 30 s (monotonic) for
        a free connection of the pool; when none comes (the database is out of reach: a restart,
        a failover) or the BEGIN fails with a transient error, entering the block raises
        ``RetryableError`` (the attempt is retried within its budget; nothing was written).
        """
        source = self.transactions
        if source is None:
            raise RuntimeError(
                "ctx.transaction() needs a context made by a worker: this one has no database connections"
            )
        return source.transaction(self)

    def set_result(self, value: Any) -> None:
        """The result stored with the success that :meth:`transaction` commits (any
        JSON-serialisable value; None for none). Call it inside the block: it is encoded when the
        block ends, where a value the database cannot store raises ResultError and rolls the
        block back. Has no effect on an attempt that does not use :meth:`transaction` (there the
        handler's return value is the result)."""
        self._result = value

    @property
    def transaction_result(self) -> Any:
        """The value last given to :meth:`set_result` (None if none)."""
        return self._result

    @property
    def transaction_verdict(self) -> TransactionVerdict | None:
        """tf_finalize's answer to the success sent by :meth:`transaction`; None until a block
        ended that way."""
        return self._verdict

    @property
    def committed(self) -> bool:
        """True once :meth:`transaction` committed the block's writes with the attempt's success
        (the task is SUCCEEDED)."""
        verdict = self._verdict
        return verdict is not None and verdict.accepted

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

    # Called by the worker (its lease renewals, taskforge.worker.leases, and its transactions,
    # taskforge.worker.transaction), not by handlers.
    def mark_cancel_requested(self) -> None:
        """Record that tf_cancel was called for the task (:attr:`cancel_requested` becomes True);
        wakes :meth:`sleep` and :meth:`async_sleep`. Any thread."""
        self._cancel_requested = True
        self.wake_sleepers()

    def mark_transaction_verdict(self, verdict: TransactionVerdict) -> None:
        """Record tf_finalize's answer to the success of :meth:`transaction` (the worker's
        transaction records a refusal before it rolls back, a success once its COMMIT returned)."""
        self._verdict = verdict

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
