"""A large, valid task history written directly with ``INSERT ... SELECT generate_series``, for the
console benchmark (``bench/console_bench.py``) and the console's browser test (its dashboard
screenshot shows an hour of history).

:func:`fill` needs the table owner (a superuser or a member of ``taskforge_owner``) and a
database made for it: it gives task ids explicitly from 1 and moves the identity past them. The
rows keep every CHECK constraint and leave ``tf_invariant_violations`` empty. What it writes:

* ``finished`` terminal tasks created evenly over the last ``history_seconds`` (up to 40 s ago)
  across 8 queues (``default``, ``emails``, ``reports``, ``billing``, ``images``,
  ``search``, ``webhooks``, ``exports``) and the types ``echo``, ``noop``, ``sleep``,
  ``fail_once``: 1 in 19 succeeded on a second attempt (1 in 190 after an abandoned first
  attempt, 30 s lease, 1.5 s recovery lag), 1 in 47 FAILED with a traceback, 1 in 97
  CANCELLED, the rest SUCCEEDED; queue wait 0..0.98 s, run time 0.05..0.35 s;
* ``queued`` due QUEUED tasks created over the last ``backlog_seconds``;
* ``workers`` registered workers, the last ``stale_workers`` of them stale (no heartbeat for five
  minutes), each live one holding one RUNNING task.

Times are the database's (``now()``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg

from .. import sql

__all__ = ["ConsoleData", "fill"]


@dataclass(frozen=True)
class ConsoleData:
    """What :func:`fill` wrote: rows per task state, attempt rows, workers and seconds taken
    (the harness's monotonic clock)."""

    tasks_by_state: dict[str, int]
    worker_ids: list[Any]
    build_seconds: float

    @property
    def total_tasks(self) -> int:
        return sum(self.tasks_by_state.values())


def fill(
    conn: psycopg.Connection[Any],
    *,
    finished: int,
    queued: int,
    history_seconds: float = 86400.0,
    backlog_seconds: float = 1800.0,
    workers: int = 16,
    stale_workers: int = 4,
) -> ConsoleData:
    """Write the history described in the module docstring through ``conn`` (autocommit: each
    statement is its own transaction). ``history_seconds`` must exceed 120 and
    ``backlog_seconds`` 10; ``0 <= stale_workers < workers``. Raises ``ValueError`` otherwise."""
    if finished < 1 or queued < 1 or history_seconds <= 120 or backlog_seconds <= 10:
        raise ValueError("finished and queued must be >= 1, history_seconds > 120, backlog_seconds > 10")
    if not 0 <= stale_workers < workers:
        raise ValueError("stale_workers: must be between 0 and workers - 1")
    started = time.monotonic()
    worker_ids: list[Any] = sql.one_value(conn, sql.CONSOLE_DATA_WORKERS, {"workers": workers})
    live, stale = worker_ids[: workers - stale_workers], worker_ids[workers - stale_workers :]
    conn.execute(sql.CONSOLE_DATA_FINISHED, {"finished": finished, "history_seconds": float(history_seconds)})
    conn.execute(sql.CONSOLE_DATA_FINISHED_ATTEMPTS, {"finished": finished, "worker_ids": worker_ids})
    conn.execute(
        sql.CONSOLE_DATA_QUEUED,
        {"finished": finished, "queued": queued, "backlog_seconds": float(backlog_seconds)},
    )
    first_running = finished + queued + 1
    conn.execute(sql.CONSOLE_DATA_RUNNING, {"first_id": first_running, "worker_ids": live})
    conn.execute(sql.CONSOLE_DATA_SET_IDENTITY, {"last_id": first_running + len(live) - 1})
    conn.execute(sql.CONSOLE_DATA_AGE_WORKERS, {"stale_ids": stale, "worker_ids": worker_ids})
    counts = {str(state): int(n) for state, n in conn.execute(sql.CONSOLE_DATA_COUNTS).fetchall()}
    return ConsoleData(tasks_by_state=counts, worker_ids=worker_ids, build_seconds=time.monotonic() - started)
