"""Running handlers: what every attempt goes through, and the threads of sync handlers.

:func:`prepare` is the first step of every attempt, sync or async: find the handler and decode
the payload, which arrives as JSON text and is decoded here, as part of the attempt: a payload
Python cannot decode (nested deeper than its recursion limit, about 1000 levels, which the
database refuses at submit but a row written by hand may hold) fails that attempt with
``taskforge.PayloadError`` and the cause. A handler that raises anything, even SystemExit,
costs its attempt (outcome ``failed`` with the error stored), never the thread that ran it.

:class:`Slots` runs sync handlers in threads that pull attempts from one queue. Threads start
lazily: a new one starts only when an attempt is waiting and no thread is free to take it, so
there are never more slot threads than sync attempts the worker has held at once (at most
``concurrency``), and a worker whose handlers are ``async def`` starts none. A thread that ends
a handler takes the next waiting attempt itself, and only one woken thread at a time looks for
work: a batch of trivial handlers is run by one or two threads with no hand-off per task, while
slow handlers spread over as many threads as there are attempts, at most ``limit``. (With
``--prefetch``, attempts claimed ahead wait before they reach the slots: :mod:`.permits`.)
Slots never talk to the database: the dispatcher finalizes what they finished.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..handlers import Handler, HandlerRegistry, Outcome, TaskContext, error_json, run_handler
from ..tracing import AttemptTracing, attempt_span
from .attempts import RunningAttempt
from .logs import attempt_fields

__all__ = ["PAYLOAD_ERROR", "Slots", "decode_payload", "log_handler_end", "not_started", "prepare"]

#: The error type stored when a claimed payload cannot be decoded.
PAYLOAD_ERROR = "taskforge.PayloadError"


def prepare(item: RunningAttempt, registry: HandlerRegistry) -> tuple[Handler, Any] | Outcome:
    """The attempt's handler and decoded payload, or the outcome that ends the attempt before its
    handler is called: ``failed`` (no handler registered, payload that cannot be decoded), or,
    for an attempt that waited for a slot (``--prefetch``), what happened while it waited (see
    :func:`not_started`)."""
    ended = not_started(item.ctx)
    if ended is not None:
        return ended
    fn = registry.get(item.ctx.task_type)
    if fn is None:
        return Outcome(
            "failed",
            error=error_json(
                type_name="taskforge.NoHandler", message=f"no handler registered for task type {item.ctx.task_type!r}"
            ),
        )
    try:
        return fn, decode_payload(item.payload)
    except BaseException as exc:  # noqa: BLE001 - RecursionError, MemoryError, ...: this attempt only
        return Outcome("failed", error=error_json(exc, type_name=PAYLOAD_ERROR, message=_payload_problem(exc)))


def not_started(ctx: TaskContext) -> Outcome | None:
    """The outcome of an attempt that must not start its handler, else None: ``cancelled`` after a
    cancel request (tf_cancel); ``retryable`` once its deadline has passed (the database refuses
    it and recovery records the attempt ``timed_out``); ``failed`` once a renewal found its lease
    gone (the database refuses it: the task is another attempt's now). Only an attempt that was
    claimed ahead and waited for a slot can be in any of these states when it starts."""
    if ctx.cancel_requested:
        return Outcome(
            "cancelled",
            error=error_json(
                type_name="taskforge.TaskCancelled", message="cancel requested (tf_cancel) before the handler started"
            ),
        )
    if ctx.timed_out:
        return Outcome(
            "retryable",
            error=error_json(
                type_name="taskforge.AttemptTimedOut",
                message=f"the attempt's deadline (timeout_seconds {ctx.timeout_seconds}) passed before its handler "
                "started",
            ),
        )
    if ctx.lease_lost:
        return Outcome(
            "failed",
            error=error_json(type_name="taskforge.LeaseLost", message="the lease was lost before the handler started"),
        )
    return None


def log_handler_end(log: logging.Logger, item: RunningAttempt, outcome: Outcome, started: float) -> None:
    """The DEBUG line of a handler's end (``started``: monotonic seconds)."""
    log.debug(
        "task %s attempt %s handler ended: %s after %.3f s",
        item.ctx.task_id,
        item.ctx.attempt_number,
        outcome.outcome,
        time.monotonic() - started,
        extra=attempt_fields(item.ctx),
    )


class Slots:
    """Sync handler threads, started lazily, at most ``limit`` (see the module docstring).

    :meth:`submit_many` hands attempts over; when one's handler ends, its thread sets
    ``item.outcome`` and calls ``on_done(item)``. :meth:`stop` ends the threads once no attempt
    waits (a running handler is never interrupted: Python threads cannot be). :meth:`run` runs
    one attempt in the calling thread (the dispatcher does, with ``concurrency`` 1). ``tracing``
    decides whether an attempt runs in a span (taskforge.tracing; default: the global provider's).
    """

    def __init__(
        self,
        limit: int,
        registry: HandlerRegistry,
        on_done: Callable[[RunningAttempt], None],
        logger: logging.Logger,
        tracing: AttemptTracing | None = None,
    ) -> None:
        self.limit = limit
        self._registry = registry
        self._tracing = tracing or AttemptTracing()
        self._on_done = on_done
        self._log = logger
        #: The slot threads started so far (they run until :meth:`stop`).
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._waiting: deque[RunningAttempt] = deque()
        self._parked: list[threading.Lock] = []  # one per idle thread, held until it is woken
        self._searching = 0  # threads woken (or started) that have not yet taken an attempt
        self._held = 0  # attempts handed over and not yet ended (waiting or running)
        self._started = 0
        self._stopping = False

    def start(self) -> None:
        """Nothing to do: threads start as attempts arrive (kept for callers that start pools)."""

    def submit(self, item: RunningAttempt) -> None:
        self.submit_many((item,))

    def submit_many(self, items: Iterable[RunningAttempt]) -> None:
        """Queue attempts for the slot threads (one lock and at most one wake-up per call)."""
        with self._lock:
            before = len(self._waiting)
            self._waiting.extend(items)
            self._held += len(self._waiting) - before
            spawn = self._wake_one()
        if spawn:
            self._spawn(spawn)

    def stop(self) -> None:
        """End every thread once no attempt waits."""
        with self._lock:
            self._stopping = True
            parked, self._parked = self._parked, []
            self._searching += len(parked)
        for lock in parked:
            lock.release()

    def _wake_one(self) -> int:
        """With the lock held: let one more thread look for work if attempts wait and none is
        looking yet. Returns the number of a new thread the caller must start (reserved here:
        no more threads than attempts held, at most ``limit``), else 0."""
        if self._searching or not self._waiting:
            return 0
        if self._parked:
            self._searching += 1
            self._parked.pop().release()
            return 0
        if self._started < min(self.limit, self._held):
            self._searching += 1
            self._started += 1
            return self._started
        return 0

    def _spawn(self, number: int) -> None:
        thread = threading.Thread(target=self._loop, name=f"slot-{number}", daemon=True)
        self.threads.append(thread)
        thread.start()

    def _loop(self) -> None:
        park = threading.Lock()
        park.acquire()
        searching, ended = True, 0
        while True:
            spawn = 0
            with self._lock:
                self._held -= ended
                if searching:
                    self._searching -= 1
                if self._waiting:
                    item: RunningAttempt | None = self._waiting.popleft()
                    spawn = self._wake_one() if self._waiting else 0
                elif self._stopping:
                    return
                else:
                    item = None
                    self._parked.append(park)
            searching, ended = False, 0
            if item is None:
                park.acquire()  # released by a waker, which counted this thread as searching
                searching = True
                continue
            if spawn:
                self._spawn(spawn)
            item.outcome = self.run(item)
            ended = 1
            self._on_done(item)

    def run(self, item: RunningAttempt) -> Outcome:
        """Run the attempt's sync handler in this thread and return its outcome (never raises),
        in the attempt's span when tracing records."""
        tracer = self._tracing.tracer()
        if tracer is None:
            return self._run(item)
        with attempt_span(tracer, item.ctx) as span:
            outcome = self._run(item)
            span.ended(outcome.outcome, outcome.error, item.ctx)
        return outcome

    def _run(self, item: RunningAttempt) -> Outcome:
        item.started = True
        started = time.monotonic()
        prepared = prepare(item, self._registry)
        if isinstance(prepared, Outcome):
            outcome = prepared
        else:
            fn, payload = prepared
            try:
                outcome = run_handler(fn, payload, item.ctx)
            except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from a handler costs the attempt only
                outcome = Outcome("failed", error=error_json(exc))
        if self._log.isEnabledFor(logging.DEBUG):
            log_handler_end(self._log, item, outcome, started)
        return outcome


def decode_payload(text: str) -> Any:
    """The claimed payload (JSON text) as Python values; :func:`json.loads` errors propagate
    (RecursionError for a document nested deeper than the interpreter's recursion limit)."""
    return json.loads(text)


def _payload_problem(exc: BaseException) -> str:
    try:
        detail = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the cause
        detail = ""
    return f"the payload could not be decoded: {type(exc).__name__}: {detail}"
