"""The handler of the failover rig (``taskforge worker --import tests/helpers/ha_handlers.py``).

``ha.work`` records each execution in a run log outside the database (which the rig fails over):
one JSON line per event, ``{"event": "start"|"end", "task_id", "attempt_number", "key", "pid",
"at"}`` (``at``: wall-clock seconds, ``time.time()``; ``key``: the idempotency key the payload
carries, so the rig can tell which task a task id meant to this worker). The file is
``$TASKFORGE_HA_RUN_LOG``; each line is one ``write`` on a file opened with O_APPEND.

Payload: ``{"key": str, "ms": int, "kind": "ok" | "flaky", "tx": bool}``: sleep ``ms``
milliseconds; ``flaky`` raises a retryable error on attempt 1. With ``tx`` the success commits
in the attempt's own transaction (``ctx.transaction()``) together with one row of
``public.ha_effects`` (key, task_id, attempt_number), after ``ms`` more milliseconds inside the
block, so that a failover now and then cuts a block off: the rig then checks that each
succeeded task has exactly one such row, written by its succeeded attempt. The result (the
handler's return value, or ``ctx.set_result``) names the key, so the rig can check that no
result landed on another task.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from taskforge import RetryableError, TaskContext, handler

RUN_LOG_ENV = "TASKFORGE_HA_RUN_LOG"
TASK_TYPE = "ha.work"
EFFECTS_TABLE = "public.ha_effects"


def record(event: str, ctx: TaskContext, key: str) -> None:
    line = json.dumps(
        {
            "event": event,
            "task_id": ctx.task_id,
            "attempt_number": ctx.attempt_number,
            "key": key,
            "pid": os.getpid(),
            "at": time.time(),
        }
    )
    fd = os.open(os.environ[RUN_LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@handler(TASK_TYPE)
def work(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any] | None:
    key = str(payload.get("key"))
    record("start", ctx, key)
    try:
        time.sleep(payload.get("ms", 0) / 1000.0)
        if payload.get("kind") == "flaky" and ctx.attempt_number == 1:
            raise RetryableError("ha: planned retryable failure on attempt 1")
        result = {"key": key, "attempt_number": ctx.attempt_number}
        if not payload.get("tx"):
            return result
        with ctx.transaction() as conn:
            conn.execute(
                f"INSERT INTO {EFFECTS_TABLE} (key, task_id, attempt_number) VALUES (%s, %s, %s)",
                (key, ctx.task_id, ctx.attempt_number),
            )
            time.sleep(payload.get("ms", 0) / 1000.0)
            ctx.set_result(result)
        return None
    finally:
        record("end", ctx, key)
