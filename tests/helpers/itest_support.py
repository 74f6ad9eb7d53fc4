"""Helpers for the tests of workers and schedulers (tests/processes, tests/sql): polling waits
and small database reads.

Reads go to the tables' views (tf_tasks, tf_attempts, tf_workers); writes use the public
tf_* functions, as any client would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
#: Handler module for `--import` (task types registered by the test_task_types fixture).
TEST_HANDLERS = Path(__file__).resolve().parent / "itest_handlers.py"
#: The same for the async def handlers of the tests.
ASYNC_TEST_HANDLERS = Path(__file__).resolve().parent / "itest_async_handlers.py"
#: The same for the handlers that finalize in their own transaction (ctx.transaction()).
TX_TEST_HANDLERS = Path(__file__).resolve().parent / "itest_tx_handlers.py"

#: Generous upper bound for waits (a loaded 2-core machine runs these tests too).
LONG = 90.0


def wait_for(
    predicate: Callable[[], Any], timeout: float = LONG, interval: float = 0.05, message: str = "condition", procs=()
) -> Any:
    """Poll predicate until it returns a truthy value (returned) or fail after timeout seconds.

    If any process in procs has exited meanwhile, fail at once with its log.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        for proc in procs:
            if not proc.alive():
                raise AssertionError(
                    f"{proc.kind} {proc.name} exited with {proc.returncode} while "
                    f"waiting for {message}:\n{proc.log()[-4000:]}"
                )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def submit(
    conn: psycopg.Connection,
    task_type: str,
    payload: dict | None = None,
    *,
    queue: str,
    priority: int = 0,
    max_attempts: int = 3,
) -> int:
    return conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %s, payload => %s::jsonb, queue => %s, "
        "priority => %s, max_attempts => %s)",
        (task_type, json.dumps(payload or {}), queue, priority, max_attempts),
    ).fetchone()[0]


def task(conn: psycopg.Connection, task_id: int) -> dict:
    cur = conn.execute("SELECT * FROM taskforge.tf_tasks WHERE task_id = %s", (task_id,))
    row = cur.fetchone()
    return dict(zip([c.name for c in cur.description], row, strict=True))


def states(conn: psycopg.Connection, task_ids: list[int]) -> dict[int, str]:
    rows = conn.execute("SELECT task_id, state FROM taskforge.tasks WHERE task_id = ANY(%s)", (task_ids,)).fetchall()
    return dict(rows)


def attempts(conn: psycopg.Connection, task_id: int) -> list[dict]:
    cur = conn.execute("SELECT * FROM taskforge.tf_attempts WHERE task_id = %s ORDER BY attempt_number", (task_id,))
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def history(conn: psycopg.Connection, task_id: int) -> list[str]:
    return [a["state"] for a in attempts(conn, task_id)]


def all_in(conn: psycopg.Connection, task_ids: list[int], wanted: set[str]) -> bool:
    current = states(conn, task_ids)
    return len(current) == len(task_ids) and all(s in wanted for s in current.values())


def worker_row(conn: psycopg.Connection, name: str) -> dict | None:
    cur = conn.execute("SELECT * FROM taskforge.tf_workers WHERE name = %s ORDER BY started_at DESC LIMIT 1", (name,))
    row = cur.fetchone()
    return None if row is None else dict(zip([c.name for c in cur.description], row, strict=True))


def wait_registered(conn: psycopg.Connection, proc, timeout: float = LONG) -> str:
    """Wait until the worker process has registered; return its worker_id (str)."""
    row = wait_for(
        lambda: worker_row(conn, proc.name), timeout, message=f"worker {proc.name} to register", procs=[proc]
    )
    return str(row["worker_id"])


def wait_running(conn: psycopg.Connection, task_id: int, attempt_number: int = 1, procs=()) -> None:
    wait_for(
        lambda: any(a["attempt_number"] == attempt_number and a["state"] == "RUNNING" for a in attempts(conn, task_id)),
        message=f"task {task_id} attempt {attempt_number} to run",
        procs=procs,
    )


def wait_log(proc, text: str, timeout: float = LONG) -> None:
    wait_for(lambda: text in proc.log(), timeout, message=f"{text!r} in the log of {proc.name}")
