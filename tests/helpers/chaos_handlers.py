"""The handler of the chaos tests (``taskforge worker --import tests/helpers/chaos_handlers.py``).

``chaos.work`` records when each execution starts and ends in a run log of its own, outside the
database (which the tests restart, crash and make read-only): one JSON line per event,
``{"event": "start"|"end", "task_id", "attempt_number", "pid", "at"}``, ``at`` being wall-clock
seconds since the epoch (``time.time()``; the database runs on the same machine, so its
timestamps are on the same clock). The file is ``$TASKFORGE_CHAOS_RUN_LOG``; each line is one
``write`` on a file opened with O_APPEND, so lines of several processes never interleave.

Payload: ``{"ms": int, "kind": "ok" | "flaky" | "fail"}``: sleep ``ms`` milliseconds, then
``ok`` succeeds, ``flaky`` raises a retryable error on attempt 1 and succeeds afterwards,
``fail`` raises an ordinary error (the task ends FAILED).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from taskforge import RetryableError, TaskContext, handler

RUN_LOG_ENV = "TASKFORGE_CHAOS_RUN_LOG"
TASK_TYPE = "chaos.work"


def record(event: str, ctx: TaskContext) -> None:
    line = json.dumps(
        {
            "event": event,
            "task_id": ctx.task_id,
            "attempt_number": ctx.attempt_number,
            "pid": os.getpid(),
            "at": time.time(),
        }
    )
    fd = os.open(os.environ[RUN_LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class PlannedFailure(Exception):
    """The ordinary error of ``kind = fail``."""


@handler(TASK_TYPE)
def work(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    record("start", ctx)
    try:
        # A plain sleep, not ctx.sleep: a lost lease must not shorten the run (the tests want to
        # see a stale execution go on, and its finalize refused).
        time.sleep(payload.get("ms", 0) / 1000.0)
        kind = payload.get("kind", "ok")
        if kind == "flaky" and ctx.attempt_number == 1:
            raise RetryableError("chaos: planned retryable failure on attempt 1")
        if kind == "fail":
            raise PlannedFailure("chaos: planned ordinary failure")
        return {"slept_ms": payload.get("ms", 0), "attempt_number": ctx.attempt_number}
    finally:
        record("end", ctx)
