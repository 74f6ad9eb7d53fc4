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

# --- the statements -------------------------------------------------------------------------------
# Sent as the table owner (a superuser or a member of taskforge_owner) to a database made for it:
# the rows are written directly, respecting every CHECK and tf_invariant_violations, so a large
# history takes seconds instead of hours of real work. Task ids are given explicitly
# (1..finished, then the backlog, then the running tasks); the identity is moved past them.
CONSOLE_DATA_WORKERS = """
SELECT array_agg(taskforge.tf_register_worker(name => 'bench-worker-' || g, hostname => 'bench-host-' || (g %% 4),
                                              pid => 1000 + g, heartbeat_seconds => 5) ORDER BY g)
  FROM generate_series(1, %(workers)s) AS g
"""
# Finished history: tasks 1..finished, created evenly over the last %(history_seconds)s seconds
# (up to 40 s ago) across 8 queues and 4 task types. Every 19th (i %% 19 = 10) succeeded on a
# second attempt after a retryable failure (every 190th after an abandoned first attempt);
# otherwise every 47th FAILED with a traceback, every 97th was CANCELLED, the rest SUCCEEDED.
# Queue wait 0..0.98 s, run time 0.05..0.35 s.
CONSOLE_DATA_FINISHED = """
INSERT INTO taskforge.tasks (task_id, task_type, payload, queue, priority, max_attempts, state, attempt_count,
                             scheduled_at, result, last_error, created_at, updated_at, finished_at)
OVERRIDING SYSTEM VALUE
SELECT i, (ARRAY['echo', 'noop', 'sleep', 'fail_once'])[1 + i %% 4],
       jsonb_build_object('n', i, 'customer', 'c' || (i %% 5000), 'note', 'bench row ' || i),
       (ARRAY['default', 'emails', 'reports', 'billing', 'images', 'search', 'webhooks', 'exports'])[1 + i %% 8],
       CASE WHEN i %% 100 = 0 THEN 5 ELSE 0 END, 3, k.state, k.attempts, c.created_at,
       CASE WHEN k.state = 'SUCCEEDED' THEN jsonb_build_object('n', i, 'ok', true) END,
       CASE WHEN k.state = 'FAILED' THEN jsonb_build_object(
           'type', 'ValueError', 'message', 'amount must be positive (task ' || i || ')',
           'traceback', E'Traceback (most recent call last):\\n  File "handlers.py", line 42, in run\\n'
                        || E'    raise ValueError(...)\\nValueError: amount must be positive\\n') END,
       c.created_at, c.created_at + k.span, c.created_at + k.span
  FROM generate_series(1, %(finished)s) AS i
 CROSS JOIN LATERAL (SELECT now() - make_interval(secs => %(history_seconds)s)
                            + make_interval(secs => (%(history_seconds)s - 40.0) * i / %(finished)s)
                            AS created_at) AS c
 CROSS JOIN LATERAL (
     SELECT CASE WHEN i %% 19 = 10 THEN 'SUCCEEDED' WHEN i %% 47 = 0 THEN 'FAILED'
                 WHEN i %% 97 = 0 THEN 'CANCELLED' ELSE 'SUCCEEDED' END AS state,
            CASE WHEN i %% 19 = 10 THEN 2 ELSE 1 END AS attempts,
            -- creation to the end of the last attempt (the arithmetic of CONSOLE_DATA_FINISHED_ATTEMPTS)
            make_interval(secs => (i %% 50) * 0.02
                                  + CASE WHEN i %% 190 = 10 THEN 30 + 1.5 + 0.05 + (i %% 7) * 0.05
                                         WHEN i %% 19 = 10 THEN 2 * (0.05 + (i %% 7) * 0.05) + 2
                                         ELSE 0.05 + (i %% 7) * 0.05 END) AS span
 ) AS k
"""
# Their attempts: attempt 1 starts after the queue wait; a second attempt starts 2 s (backoff)
# after a retryable failure, or as soon as an abandoned attempt was recovered (1.5 s after its
# 30 s lease expired). Workers are taken in turn from %(worker_ids)s.
CONSOLE_DATA_FINISHED_ATTEMPTS = """
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, outcome, started_at,
                                lease_expires_at, finished_at, result, error)
SELECT t.task_id, n.n, (%(worker_ids)s::uuid[])[1 + (t.task_id + n.n) %% cardinality(%(worker_ids)s::uuid[])],
       x.state, x.outcome, x.started_at, x.started_at + interval '30 seconds', x.finished_at,
       CASE WHEN x.state = 'SUCCEEDED' THEN t.result END,
       CASE WHEN x.state = 'FAILED' AND n.n = t.attempt_count THEN t.last_error
            WHEN x.state = 'FAILED'
            THEN '{"type": "RetryableError", "message": "busy, try again", "traceback": null}'::jsonb END
  FROM taskforge.tasks t
 CROSS JOIN LATERAL generate_series(1, t.attempt_count) AS n(n)
 CROSS JOIN LATERAL (SELECT 0.05 + (t.task_id %% 7) * 0.05 AS run, (t.task_id %% 50) * 0.02 AS wait) AS d
 CROSS JOIN LATERAL (
     SELECT CASE WHEN n.n < t.attempt_count
                 THEN CASE WHEN t.task_id %% 190 = 10 THEN 'ABANDONED' ELSE 'FAILED' END
                 ELSE t.state END AS state,
            CASE WHEN n.n < t.attempt_count
                 THEN CASE WHEN t.task_id %% 190 = 10 THEN 'lease_expired' ELSE 'retryable' END
                 ELSE lower(t.state) END AS outcome,
            t.created_at + make_interval(secs => d.wait + CASE WHEN n.n = 1 THEN 0
                                                               WHEN t.task_id %% 190 = 10 THEN 30 + 1.5
                                                               ELSE d.run + 2 END) AS started_at,
            t.created_at + make_interval(secs => d.wait + CASE WHEN n.n = 1 AND t.task_id %% 190 = 10 THEN 30 + 1.5
                                                               WHEN n.n = 1 THEN d.run
                                                               WHEN t.task_id %% 190 = 10 THEN 30 + 1.5 + d.run
                                                               ELSE 2 * d.run + 2 END) AS finished_at
 ) AS x
 WHERE t.task_id <= %(finished)s
"""
# The backlog: tasks finished+1 .. finished+queued, QUEUED and due, created evenly over the last
# %(backlog_seconds)s seconds.
CONSOLE_DATA_QUEUED = """
INSERT INTO taskforge.tasks (task_id, task_type, payload, queue, priority, max_attempts, state, attempt_count,
                             scheduled_at, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT %(finished)s + i, (ARRAY['echo', 'noop', 'sleep', 'fail_once'])[1 + i %% 4],
       jsonb_build_object('n', i, 'customer', 'c' || (i %% 5000)),
       (ARRAY['default', 'emails', 'reports', 'billing', 'images', 'search', 'webhooks', 'exports'])[1 + i %% 8],
       CASE WHEN i %% 100 = 0 THEN 5 ELSE 0 END, 3, 'QUEUED', 0, c.created_at, c.created_at, c.created_at
  FROM generate_series(1, %(queued)s) AS i
 CROSS JOIN LATERAL (SELECT now() - make_interval(secs => %(backlog_seconds)s)
                            + make_interval(secs => (%(backlog_seconds)s - 10.0) * i / %(queued)s)
                            AS created_at) AS c
"""
# One RUNNING task per worker in %(worker_ids)s (ids from %(first_id)s on), started 5 s ago under a 30 s lease.
CONSOLE_DATA_RUNNING = """
WITH w AS (SELECT worker_id, ord FROM unnest(%(worker_ids)s::uuid[]) WITH ORDINALITY AS u(worker_id, ord)),
t AS (
    INSERT INTO taskforge.tasks (task_id, task_type, payload, queue, priority, max_attempts, state, attempt_count,
                                 scheduled_at, owner_worker_id, lease_expires_at, created_at, updated_at)
    OVERRIDING SYSTEM VALUE
    SELECT %(first_id)s + w.ord - 1, 'sleep', jsonb_build_object('ms', 60000), 'default', 0, 3, 'RUNNING', 1,
           now() - interval '6 seconds', w.worker_id, now() + interval '25 seconds',
           now() - interval '6 seconds', now() - interval '5 seconds'
      FROM w
    RETURNING task_id, owner_worker_id
)
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, started_at, lease_expires_at)
SELECT t.task_id, 1, t.owner_worker_id, 'RUNNING', now() - interval '5 seconds', now() + interval '25 seconds'
  FROM t
"""
CONSOLE_DATA_SET_IDENTITY = "SELECT setval(pg_get_serial_sequence('taskforge.tasks', 'task_id'), %(last_id)s)"
# Every worker started a day ago; those in %(stale_ids)s last beat 5 minutes ago (stale), the others now.
CONSOLE_DATA_AGE_WORKERS = """
UPDATE taskforge.workers
   SET started_at = now() - interval '25 hours',
       last_heartbeat_at = CASE WHEN worker_id = ANY(%(stale_ids)s::uuid[]) THEN now() - interval '5 minutes'
                                ELSE now() END
 WHERE worker_id = ANY(%(worker_ids)s::uuid[])
"""
CONSOLE_DATA_COUNTS = "SELECT state, count(*) FROM taskforge.tasks GROUP BY state ORDER BY state"


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
    worker_ids: list[Any] = sql.one_value(conn, CONSOLE_DATA_WORKERS, {"workers": workers})
    live, stale = worker_ids[: workers - stale_workers], worker_ids[workers - stale_workers :]
    conn.execute(CONSOLE_DATA_FINISHED, {"finished": finished, "history_seconds": float(history_seconds)})
    conn.execute(CONSOLE_DATA_FINISHED_ATTEMPTS, {"finished": finished, "worker_ids": worker_ids})
    conn.execute(
        CONSOLE_DATA_QUEUED,
        {"finished": finished, "queued": queued, "backlog_seconds": float(backlog_seconds)},
    )
    first_running = finished + queued + 1
    conn.execute(CONSOLE_DATA_RUNNING, {"first_id": first_running, "worker_ids": live})
    conn.execute(CONSOLE_DATA_SET_IDENTITY, {"last_id": first_running + len(live) - 1})
    conn.execute(CONSOLE_DATA_AGE_WORKERS, {"stale_ids": stale, "worker_ids": worker_ids})
    counts = {str(state): int(n) for state, n in conn.execute(CONSOLE_DATA_COUNTS).fetchall()}
    return ConsoleData(tasks_by_state=counts, worker_ids=worker_ids, build_seconds=time.monotonic() - started)
