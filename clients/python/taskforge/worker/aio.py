"""``async def`` handlers: one asyncio event loop in a thread of its own, and a watchdog.

Started only when the worker claims task types whose handler is ``async def``. Hand-offs cross
threads once per batch, never once per task:

* in: the dispatcher hands a turn's async claims over with :meth:`AsyncRunner.submit_many`,
  one ``call_soon_threadsafe`` per batch; on the loop, each attempt becomes one task
  (:meth:`AsyncRunner._attempt`: decode the payload, await the handler, map the outcome);
* out: attempts whose handlers ended are collected and handed back to the dispatcher in one
  ``on_done(batch)`` call per loop iteration (a flush scheduled by the first one to end);
* cancellation: :meth:`AsyncRunner.interrupt` (the renewer learned of a cancel request) and
  a timer at the attempt's deadline first wake ``ctx.async_sleep`` (it returns True), then,
  one loop iteration later, cancel the coroutine: ``asyncio.CancelledError`` is raised where
  it awaits. It ends ``cancelled`` after a cancel request and ``retryable`` after the deadline
  (:func:`taskforge.handlers.outcome_of_error`), which the database refuses past the
  deadline: recovery records the attempt ``timed_out``.

The loop cannot watch itself: :meth:`AsyncRunner.watch` runs in another thread, and when the
loop has not come round for more than :data:`STALL_SECONDS` (a handler called something
blocking) it logs a warning naming the attempt whose code runs. Leases do not depend on the
loop: the renewer thread renews them. Times are monotonic seconds (the loop's clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..handlers import HandlerRegistry, Outcome, outcome_of_error, outcome_of_value
from ..tracing import AttemptTracing, attempt_span
from .attempts import AttemptTable, RunningAttempt
from .execute import log_handler_end, prepare
from .finalize import LOG_EVERY_SECONDS
from .logs import attempt_fields

__all__ = ["STALL_SECONDS", "AsyncRunner"]

#: The loop lagging more than this (seconds) is a stall: a handler blocks it.
STALL_SECONDS = 1.0
#: How often (seconds) the loop records that it is alive, and the watchdog looks.
TICK_SECONDS = 0.25
#: How long (seconds) a loop that is stopped with tasks left (a forced exit) lets them unwind.
UNWIND_SECONDS = 1.0


class AsyncRunner:
    """Runs async handlers on one event loop (see the module docstring).

    ``on_done(items)`` receives attempts whose ``outcome`` is set, a loop iteration's worth at
    a time, on the loop's thread. ``on_close()`` is awaited on the loop once it has stopped,
    before the tasks left are cancelled (the worker closes the pool of ``ctx.transaction()``
    there). ``tracing`` decides whether an attempt runs in a span (taskforge.tracing). Call
    :meth:`open`, then run :meth:`run` and :meth:`watch` in threads of their own; :meth:`stop`
    ends both.
    """

    def __init__(
        self,
        registry: HandlerRegistry,
        attempts: AttemptTable,
        on_done: Callable[[list[RunningAttempt]], None],
        halt: threading.Event,
        logger: logging.Logger,
        on_close: Callable[[], Awaitable[None]] | None = None,
        tracing: AttemptTracing | None = None,
    ) -> None:
        self._registry = registry
        self._on_close = on_close
        self._tracing = tracing or AttemptTracing()
        self._attempts = attempts
        self._on_done = on_done
        self._halt = halt
        self._log = logger
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: list[RunningAttempt] = []
        self._inbox_lock = threading.Lock()
        self._ended: list[RunningAttempt] = []
        self._timers: dict[RunningAttempt, asyncio.TimerHandle] = {}
        self._beat = time.monotonic()

    # --- any thread ----------------------------------------------------------------------------

    def open(self) -> None:
        """Create the event loop (it runs in :meth:`run`)."""
        loop = self._loop = asyncio.new_event_loop()
        loop.set_exception_handler(self._loop_error)

    def submit_many(self, items: list[RunningAttempt]) -> None:
        """Start these attempts' handlers on the loop (one thread hand-off for the batch)."""
        with self._inbox_lock:
            first = not self._inbox
            self._inbox.extend(items)
        if first:
            self._threadsafe(self._drain)

    def interrupt(self, items: list[RunningAttempt]) -> None:
        """A cancel was requested for these running attempts (their ``ctx`` says so): cancel
        their coroutines (one thread hand-off for the batch)."""
        self._threadsafe(self._interrupt_all, items)

    def stop(self) -> None:
        """Stop the loop (attempts still running are cancelled and not handed back); nothing
        when it was never opened. The watchdog ends with the worker's ``halt``."""
        if self._loop is not None:
            self._threadsafe(self._stop_loop)

    def _threadsafe(self, callback: Callable[..., None], *args: Any) -> None:
        if self._loop is None:
            raise RuntimeError("the event loop of async handlers was not opened")
        with contextlib.suppress(RuntimeError):  # closed: the worker is exiting
            self._loop.call_soon_threadsafe(callback, *args)

    # --- the loop's thread -----------------------------------------------------------------------

    def run(self) -> None:
        """Run the loop until :meth:`stop` (the loop's thread)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the event loop of async handlers was not opened")
        asyncio.set_event_loop(loop)
        self._beat = time.monotonic()
        loop.call_soon(self._tick)
        try:
            loop.run_forever()
        finally:
            if self._on_close is not None:  # before the tasks are cancelled: a pool's own are among them
                try:
                    loop.run_until_complete(asyncio.wait_for(self._on_close(), UNWIND_SECONDS))
                except (Exception, asyncio.CancelledError):  # noqa: BLE001 - it must not hide the way out
                    self._log.warning("closing the event loop's connections failed", exc_info=True)
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.wait(left, timeout=UNWIND_SECONDS))
            loop.close()

    def _stop_loop(self) -> None:
        self._on_done = _discard  # a stopping worker finalizes nothing more from here
        asyncio.get_running_loop().stop()

    def _tick(self) -> None:
        self._beat = time.monotonic()
        asyncio.get_running_loop().call_later(TICK_SECONDS, self._tick)

    def _drain(self) -> None:
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
        loop = asyncio.get_running_loop()
        for item in items:
            item.task = loop.create_task(self._attempt(item))
            ctx = item.ctx
            if ctx.deadline is not None:
                self._timers[item] = loop.call_at(ctx.deadline, self._deadline_passed, item)
            if ctx.cancel_requested:  # requested before its handler started
                self._interrupt(item)

    async def _attempt(self, item: RunningAttempt) -> None:
        item.started = True
        debug = self._log.isEnabledFor(logging.DEBUG)
        started = time.monotonic() if debug else 0.0
        tracer = self._tracing.tracer()
        if tracer is None:
            outcome = await self._outcome(item)
        else:
            with attempt_span(tracer, item.ctx) as span:
                outcome = await self._outcome(item)
                span.ended(outcome.outcome, outcome.error, item.ctx)
        if debug:
            log_handler_end(self._log, item, outcome, started)
        item.outcome = outcome
        item.task = None
        timer = self._timers.pop(item, None) if self._timers else None
        if timer is not None:
            timer.cancel()
        ended = self._ended
        ended.append(item)
        if len(ended) == 1:
            asyncio.get_running_loop().call_soon(self._flush)

    async def _outcome(self, item: RunningAttempt) -> Outcome:
        """Decode the payload, await the handler, and map how it ended (never raises)."""
        prepared = prepare(item, self._registry)
        if isinstance(prepared, Outcome):
            return prepared
        fn, payload = prepared
        try:
            value = await fn(payload, item.ctx)
        except BaseException as exc:  # noqa: BLE001 - CancelledError, SystemExit...: this attempt only
            return outcome_of_error(exc, item.ctx)
        return outcome_of_value(value)

    def _flush(self) -> None:
        items, self._ended = self._ended, []
        self._on_done(items)

    def _interrupt_all(self, items: Iterable[RunningAttempt]) -> None:
        for item in items:
            self._interrupt(item)

    def _deadline_passed(self, item: RunningAttempt) -> None:
        self._timers.pop(item, None)
        if item.outcome is None:
            self._log.warning(
                "%s passed its deadline (timeout_seconds %s): cancelling its coroutine; the database "
                "records the attempt timed_out and the task is retried within its budget",
                item.describe(),
                item.ctx.timeout_seconds,
                extra=attempt_fields(item.ctx),
            )
            self._interrupt(item)

    def _interrupt(self, item: RunningAttempt) -> None:
        """Wake the attempt's ``ctx.async_sleep`` now, cancel its coroutine next iteration."""
        if item.outcome is None:
            item.ctx.wake_sleepers()
            asyncio.get_running_loop().call_soon(self._cancel, item)

    def _cancel(self, item: RunningAttempt) -> None:
        if item.outcome is not None or item.task is None:
            return
        if not item.started:  # cancelling a task before its first step would skip _attempt
            asyncio.get_running_loop().call_soon(self._cancel, item)
            return
        item.task.cancel()

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        self._log.error(
            "event loop of async handlers: %s", context.get("message"), exc_info=exc if exc is not None else None
        )

    # --- the watchdog's thread --------------------------------------------------------------------

    def watch(self) -> None:
        """Until the worker halts: warn when the loop lags more than :data:`STALL_SECONDS`."""
        stalled = 0.0  # how long the current stall had lasted when last seen
        logged_at = 0.0
        while not self._halt.wait(TICK_SECONDS):
            now = time.monotonic()
            lag = now - self._beat - TICK_SECONDS
            if lag > STALL_SECONDS:
                if not stalled or now - logged_at >= LOG_EVERY_SECONDS:
                    logged_at = now
                    self._log.warning(
                        "the event loop of async handlers has not run for %.1f s: it is blocked in %s. A "
                        "blocking call in an async def handler (time.sleep, blocking I/O, long CPU work) "
                        "stalls every async handler of this worker; await instead, or make it a sync "
                        "handler. Leases are still renewed (by the renewer thread)",
                        lag,
                        self._running_code(),
                    )
                stalled = lag
            elif stalled:
                self._log.info("the event loop of async handlers runs again after a stall of %.1f s", stalled)
                stalled = 0.0

    def _running_code(self) -> str:
        """What the loop runs now (read from another thread): the attempt, or the task or callback."""
        loop = self._loop
        task = asyncio.current_task(loop) if loop is not None else None
        if task is None:
            return "a callback, outside any handler's task"
        for item in self._attempts.snapshot():
            if item.task is task:
                return item.describe()
        return f"task {task.get_name()} ({task.get_coro()!r}), not started by the worker itself"


def _discard(items: list[RunningAttempt]) -> None:
    """``on_done`` of a stopped runner."""
