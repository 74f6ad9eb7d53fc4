"""Handler slots: ``concurrency`` threads that run one handler each and hand the outcome back.

A slot never talks to the database: the dispatcher finalizes what the slots finished (many at
once when many finish during one round trip). A handler that raises anything, even SystemExit,
costs its attempt (outcome ``failed`` with the error stored), never the slot. The payload arrives
as JSON text and is decoded here, as part of the attempt: a payload Python cannot decode (nested
deeper than its recursion limit, about 1000 levels, which the database refuses at submit but a
row written by hand may hold) fails that attempt with ``taskforge.PayloadError`` and the cause.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ..handlers import HandlerRegistry, Outcome, error_json, run_handler
from .attempts import RunningAttempt

__all__ = ["PAYLOAD_ERROR", "Slots", "decode_payload"]

#: The error type stored when a claimed payload cannot be decoded.
PAYLOAD_ERROR = "taskforge.PayloadError"


class Slots:
    """A fixed pool of handler threads fed through one queue.

    :meth:`submit` hands a claimed attempt to a free thread; when its handler ends, the slot
    sets ``item.outcome`` and calls ``on_done(item)``. :meth:`stop` ends the threads once the
    queue is empty (a running handler is never interrupted: Python threads cannot be).
    """

    def __init__(
        self, count: int, registry: HandlerRegistry, on_done: Callable[[RunningAttempt], None], logger: logging.Logger
    ) -> None:
        self._registry = registry
        self._on_done = on_done
        self._log = logger
        self._queue: queue.SimpleQueue[RunningAttempt | None] = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._loop, name=f"slot-{i + 1}", daemon=True) for i in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def submit(self, item: RunningAttempt) -> None:
        self._queue.put(item)

    def stop(self) -> None:
        for _ in self.threads:
            self._queue.put(None)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            item.outcome = self.run(item)
            self._on_done(item)

    def run(self, item: RunningAttempt) -> Outcome:
        """Run the attempt's handler in this thread and return its outcome (never raises)."""
        ctx = item.ctx
        fn = self._registry.get(ctx.task_type)
        started = time.monotonic()
        if fn is None:
            outcome = Outcome(
                "failed",
                error=error_json(
                    type_name="taskforge.NoHandler", message=f"no handler registered for task type {ctx.task_type!r}"
                ),
            )
        else:
            try:
                payload = decode_payload(item.payload)
            except BaseException as exc:  # noqa: BLE001 - RecursionError, MemoryError, ...: this attempt only
                outcome = Outcome(
                    "failed", error=error_json(exc, type_name=PAYLOAD_ERROR, message=_payload_problem(exc))
                )
            else:
                try:
                    outcome = run_handler(fn, payload, ctx)
                except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from a handler costs the attempt only
                    outcome = Outcome("failed", error=error_json(exc))
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                "task %s attempt %s handler ended: %s after %.3f s",
                ctx.task_id,
                ctx.attempt_number,
                outcome.outcome,
                time.monotonic() - started,
            )
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
