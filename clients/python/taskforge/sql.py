"""Every SQL statement the Python side sends, in one place.

Statements call the public ``taskforge.tf_*`` functions with named arguments (``=>``) or read
the ``taskforge.tf_*`` views. Placeholders are psycopg's ``%(name)s``. Keep statements here so
a DBA can audit what the clients send by reading one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


#: Placeholder values for a statement: by name (``%(name)s``) or by position (``%s``).
Params = Mapping[str, Any] | Sequence[Any] | None


def one_row(conn: psycopg.Connection[Any], query: str, params: Params = None) -> tuple[Any, ...]:
    """The row of a statement that always returns exactly one (an aggregate, a function call)."""
    row: tuple[Any, ...] | None = conn.execute(query, params).fetchone()
    if row is None:
        raise LookupError(f"no row returned by: {' '.join(query.split())[:200]}")
    return row


def one_value(conn: psycopg.Connection[Any], query: str, params: Params = None) -> Any:
    """The first column of :func:`one_row`."""
    return one_row(conn, query, params)[0]


# --- database / migrations ------------------------------------------------------------------
SCHEMA_VERSION = "SELECT taskforge.tf_schema_version()"
SCHEMA_EXISTS = "SELECT to_regnamespace('taskforge') IS NOT NULL"
CURRENT_DATABASE = "SELECT current_database()"

# --- admission (clients) ----------------------------------------------------------------------
SUBMIT = """
SELECT task_id, state, created
  FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, queue => %(queue)s,
                           priority => %(priority)s, max_attempts => %(max_attempts)s,
                           scheduled_at => %(scheduled_at)s, idempotency_key => %(idempotency_key)s,
                           timeout_seconds => %(timeout_seconds)s)
"""
CANCEL = "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %(task_id)s, reason => %(reason)s)"
RETRY = (
    "SELECT task_state, max_attempts"
    " FROM taskforge.tf_retry(task_id => %(task_id)s, extra_attempts => %(extra_attempts)s)"
)
# tf_submit with scheduled_at = database time + delay_seconds (the caller's clock is never used).
SUBMIT_DELAYED = """
SELECT task_id, state, created
  FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, queue => %(queue)s,
                           priority => %(priority)s, max_attempts => %(max_attempts)s,
                           scheduled_at => clock_timestamp() + make_interval(secs => %(delay_seconds)s),
                           idempotency_key => %(idempotency_key)s, timeout_seconds => %(timeout_seconds)s)
"""

# tf_submit_many: %(requests)s is a jsonb array of request objects (tf_submit's parameter names).
SUBMIT_MANY = "SELECT task_id, state, created FROM taskforge.tf_submit_many(requests => %(requests)s)"
# tf_submit_many where some requests are delayed: %(delays)s is a float8[] as long as the array
# (NULL = no delay); a delayed element gets scheduled_at = database time + delay, in UTC.
SUBMIT_MANY_DELAYED = """
SELECT task_id, state, created
  FROM taskforge.tf_submit_many(requests => (
      SELECT jsonb_agg(CASE WHEN d.delay_seconds IS NULL THEN r.request
                            ELSE r.request || jsonb_build_object('scheduled_at',
                                 to_char((clock_timestamp() + make_interval(secs => d.delay_seconds))
                                         AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
                       END ORDER BY r.n)
        FROM jsonb_array_elements(%(requests)s) WITH ORDINALITY AS r(request, n)
        JOIN unnest(%(delays)s::float8[]) WITH ORDINALITY AS d(delay_seconds, n) USING (n)))
"""

# --- periodic schedules (clients) ---------------------------------------------------------------
SCHEDULE_PERIODIC = """
SELECT next_fire_at, created
  FROM taskforge.tf_schedule_periodic(name => %(name)s, cron => %(cron)s, task_type => %(task_type)s,
                                      payload => %(payload)s, queue => %(queue)s, priority => %(priority)s,
                                      max_attempts => %(max_attempts)s, timezone => %(timezone)s)
"""
UNSCHEDULE_PERIODIC = "SELECT taskforge.tf_unschedule_periodic(name => %(name)s)"
PERIODIC_LIST = """
SELECT name, cron, timezone, task_type, queue, priority, max_attempts, payload, next_fire_at,
       last_fire_at, last_task_id, last_task_state, created_at, updated_at
  FROM taskforge.tf_periodic
 ORDER BY name
"""

# --- worker -------------------------------------------------------------------------------------
REGISTER_WORKER = """
SELECT taskforge.tf_register_worker(name => %(name)s, hostname => %(hostname)s, pid => %(pid)s,
                                    queues => %(queues)s, task_types => %(task_types)s,
                                    heartbeat_seconds => %(heartbeat_seconds)s)
"""
HEARTBEAT = "SELECT taskforge.tf_heartbeat(worker_id => %(worker_id)s)"
DEREGISTER_WORKER = "SELECT taskforge.tf_deregister_worker(worker_id => %(worker_id)s)"
CLAIM = """
SELECT task_id, attempt_number, task_type, payload, queue, priority, max_attempts, lease_expires_at,
       timeout_seconds
  FROM taskforge.tf_claim(worker_id => %(worker_id)s, queues => %(queues)s,
                          lease_seconds => %(lease_seconds)s, max_tasks => %(max_tasks)s,
                          task_types => %(task_types)s)
"""
RENEW = """
SELECT renewed, lease_expires_at, cancel_requested, reason
  FROM taskforge.tf_renew(task_id => %(task_id)s, worker_id => %(worker_id)s,
                          attempt_number => %(attempt_number)s, lease_seconds => %(lease_seconds)s)
"""
FINALIZE = """
SELECT accepted, task_state, reason
  FROM taskforge.tf_finalize(task_id => %(task_id)s, worker_id => %(worker_id)s,
                             attempt_number => %(attempt_number)s, outcome => %(outcome)s,
                             result => %(result)s, error => %(error)s)
"""
# The worker's hot path: finalize the attempts it finished and claim for its free slots in one
# round trip and one commit. Arrays are element-aligned; results and errors are JSON text
# (cast to jsonb[]), NULL elements where there is none. Rows: kind 'finalized' (input order),
# then kind 'claimed' (claim order). The payload comes back as JSON text: the handler slot
# decodes it, so a payload Python cannot decode costs its own attempt, never the dispatcher.
FINALIZE_AND_CLAIM = """
SELECT kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload::text AS payload, queue,
       priority, max_attempts, timeout_seconds
  FROM taskforge.tf_finalize_and_claim(
           worker_id => %(worker_id)s, task_ids => %(task_ids)s::bigint[],
           attempt_numbers => %(attempt_numbers)s::int[], outcomes => %(outcomes)s::text[],
           results => %(results)s::text[]::jsonb[], errors => %(errors)s::text[]::jsonb[],
           queues => %(queues)s::text[], lease_seconds => %(lease_seconds)s,
           max_tasks => %(max_tasks)s, task_types => %(task_types)s::text[])
"""
# Every lease of the worker that is due, in one statement; rows locked elsewhere come back busy.
RENEW_MANY = """
SELECT task_id, attempt_number, renewed, cancel_requested, reason
  FROM taskforge.tf_renew_many(worker_id => %(worker_id)s, task_ids => %(task_ids)s::bigint[],
                               attempt_numbers => %(attempt_numbers)s::int[],
                               lease_seconds => %(lease_seconds)s)
"""
LISTEN = "LISTEN taskforge"

# --- scheduler ----------------------------------------------------------------------------------
RECOVER = "SELECT recovered, failed, next_lease_expiry FROM taskforge.tf_recover(max_tasks => %(max_tasks)s)"
PROMOTE = "SELECT promoted, next_due_at FROM taskforge.tf_promote(max_tasks => %(max_tasks)s)"
PRUNE = "SELECT taskforge.tf_prune(older_than_seconds => %(older_than_seconds)s, max_tasks => %(max_tasks)s)"
# Retention of process records, after PRUNE (attempts keep their worker's row until then).
PRUNE_WORKERS = """
SELECT workers, schedulers
  FROM taskforge.tf_prune_workers(older_than_seconds => %(older_than_seconds)s, max_rows => %(max_rows)s)
"""
DB_NOW = "SELECT clock_timestamp()"
# The scheduler's liveness beat (every heartbeat_seconds; stopping on a clean stop).
SCHEDULER_HEARTBEAT = """
SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %(scheduler_id)s, name => %(name)s, hostname => %(hostname)s,
                                        pid => %(pid)s, heartbeat_seconds => %(heartbeat_seconds)s,
                                        stopping => %(stopping)s)
"""
# One scheduler pass (taskforge.scheduler): recover, promote, then enqueue the due ticks of
# periodic schedules, in one round trip. The time left until the next lease deadline, the next
# backoff end and the next periodic tick is computed by the database (seconds, negative when
# already past, NULL when there is none), so the scheduler never compares its own clock with a
# database timestamp. names/ticks/task_ids: one element per periodic tick enqueued.
SCHEDULER_TICK = """
SELECT r.recovered, r.failed, p.promoted, e.enqueued,
       extract(epoch FROM r.next_lease_expiry - clock_timestamp())::double precision AS seconds_to_lease_expiry,
       extract(epoch FROM p.next_due_at - clock_timestamp())::double precision AS seconds_to_next_due,
       extract(epoch FROM e.next_fire_at - clock_timestamp())::double precision AS seconds_to_next_tick,
       e.names, e.ticks, e.task_ids
  FROM taskforge.tf_recover(max_tasks => %(max_tasks)s) AS r
 CROSS JOIN LATERAL taskforge.tf_promote(max_tasks => %(max_tasks)s) AS p
 CROSS JOIN LATERAL taskforge.tf_enqueue_periodic(max_tasks => %(max_tasks)s) AS e
"""

# --- read surface (views) -----------------------------------------------------------------------
INVARIANT_VIOLATIONS = "SELECT rule, task_id, attempt_number, detail FROM taskforge.tf_invariant_violations"

# --- client reads (taskforge.client: CLI and console) ---------------------------------------------
_TASK_COLUMNS = """task_id, task_type, queue, priority, state, attempt_count, max_attempts, attempts_left,
       scheduled_at, created_at, updated_at, finished_at, owner_worker_id, lease_expires_at,
       cancel_requested, cancel_reason, idempotency_key, fingerprint, payload, result, last_error,
       current_attempt_state, current_attempt_worker_id, current_attempt_started_at,
       current_attempt_finished_at"""
TASK_GET = f"SELECT {_TASK_COLUMNS}\n  FROM taskforge.tf_tasks WHERE task_id = %(task_id)s"
# Newest first. NULL filters match everything.
_TASKS_LIST_FILTER = """
  FROM taskforge.tf_tasks
 WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
   AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
   AND (%(task_type)s::text IS NULL OR task_type = %(task_type)s::text)
 ORDER BY task_id DESC
 LIMIT %(limit)s
"""
TASKS_LIST = f"\nSELECT {_TASK_COLUMNS}{_TASKS_LIST_FILTER}"
# The columns of `taskforge list`'s table only: no documents (a payload alone may be 1 MiB).
TASKS_LIST_BRIEF = f"""
SELECT task_id, task_type, queue, priority, state, attempt_count, max_attempts, scheduled_at, created_at,
       finished_at{_TASKS_LIST_FILTER}"""
TASKS_BY_ID = (
    f"SELECT {_TASK_COLUMNS}\n  FROM taskforge.tf_tasks WHERE task_id = ANY(%(task_ids)s::bigint[]) ORDER BY task_id"
)
_ATTEMPT_COLUMNS = """task_id, attempt_number, task_type, queue, worker_id, worker_name, state, outcome,
       started_at, lease_expires_at, finished_at, abandoned_at, duration_seconds,
       recovery_lag_seconds, result, error"""
ATTEMPTS_FOR_TASKS = f"""
SELECT {_ATTEMPT_COLUMNS}
  FROM taskforge.tf_attempts
 WHERE task_id = ANY(%(task_ids)s::bigint[])
 ORDER BY task_id, attempt_number
"""
WORKERS_LIST = """
SELECT worker_id, name, hostname, pid, queues, task_types, heartbeat_seconds, started_at,
       last_heartbeat_at, stopped_at, seconds_since_heartbeat, liveness, running_tasks
  FROM taskforge.tf_workers
 WHERE %(include_stopped)s OR liveness <> 'stopped'
 ORDER BY started_at DESC, worker_id
"""
SCHEDULERS_LIST = """
SELECT scheduler_id, name, hostname, pid, heartbeat_seconds, started_at, last_heartbeat_at, stopped_at,
       seconds_since_heartbeat, liveness
  FROM taskforge.tf_schedulers
 WHERE %(include_stopped)s OR liveness <> 'stopped'
 ORDER BY started_at DESC, scheduler_id
"""
QUEUE_STATS = "SELECT queue, state, tasks, oldest_created_at FROM taskforge.tf_queue_stats ORDER BY queue, state"
# Per minute (UTC) and queue over the last hour, oldest minute first (the console's charts).
THROUGHPUT_PER_MINUTE = """
SELECT minute, queue, attempts_finished, attempts_succeeded, attempts_failed, first_attempts,
       wait_p50_seconds, wait_p95_seconds
  FROM taskforge.tf_throughput_per_minute
 ORDER BY minute, queue
"""
# Tasks that reached a terminal state in the last %(seconds)s seconds, per queue and state
# (read along tasks_finished_idx).
TASKS_FINISHED_RECENTLY = """
SELECT queue, state, count(*) AS tasks
  FROM taskforge.tf_tasks
 WHERE finished_at >= now() - make_interval(secs => %(seconds)s)
 GROUP BY queue, state
 ORDER BY queue, state
"""
# The current minute of database time, truncated in UTC (the charts' last slot).
DB_CURRENT_MINUTE = "SELECT date_trunc('minute', now(), 'UTC')"
TASK_TYPES = """
SELECT task_type, backoff_base_seconds, backoff_cap_seconds, backoff_jitter, description
  FROM taskforge.tf_task_types
 ORDER BY task_type
"""
# RUNNING tasks with their owner and current attempt, oldest first (read along the RUNNING partial index).
RUNNING_TASKS = """
SELECT task_id, task_type, queue, attempt_count, max_attempts, owner_worker_id, lease_expires_at,
       current_attempt_started_at, cancel_requested
  FROM taskforge.tf_tasks
 WHERE state = 'RUNNING'
 ORDER BY task_id
 LIMIT %(limit)s
"""
QUEUES_LIST = """
SELECT queue, paused, paused_at, max_running, queued, due, running, retrying, oldest_due_at, oldest_due_age_seconds
  FROM taskforge.tf_queues
 ORDER BY queue
"""
PAUSE_QUEUE = "SELECT taskforge.tf_pause_queue(queue => %(queue)s)"
RESUME_QUEUE = "SELECT taskforge.tf_resume_queue(queue => %(queue)s)"
SET_QUEUE_LIMIT = "SELECT taskforge.tf_set_queue_limit(queue => %(queue)s, max_running => %(max_running)s)"
THROUGHPUT = """
SELECT window_seconds, queue, attempts_finished, attempts_succeeded, attempts_failed,
       succeeded_per_second, run_p50_seconds, run_p95_seconds, wait_p50_seconds, wait_p95_seconds
  FROM taskforge.tf_throughput
 ORDER BY window_seconds, queue
"""

# --- console (taskforge_console) -----------------------------------------------------------------
# Session settings of every pooled console connection: the read limit; no JIT (every console
# query is short, and compiling costs 10-20 ms per statement); work_mem for the per-minute sort.
# Then the limit of one action (a transaction).
CONSOLE_SESSION_SETTINGS = """
SELECT set_config('statement_timeout', %(ms)s, false), set_config('jit', 'off', false),
       set_config('work_mem', '16MB', false)
"""
CONSOLE_SET_LOCAL_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %(ms)s, true)"
# The task filter of the console's list and bulk actions (NULL = no condition). Sent unprepared
# (prepare=False), so the planner sees the values and drops the conditions that are NULL.
# Keyset pagination: newest first, the next page starts below the last task_id seen
# (%(cursor)s), read backwards along the primary key.
_CONSOLE_TASK_FILTER = """
 WHERE (%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))
   AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
   AND (%(task_type)s::text IS NULL OR task_type = %(task_type)s::text)
   AND (%(task_id)s::bigint IS NULL OR task_id = %(task_id)s::bigint)
   AND (%(created_after)s::timestamptz IS NULL OR created_at >= %(created_after)s::timestamptz)
   AND (%(created_before)s::timestamptz IS NULL OR created_at < %(created_before)s::timestamptz)
   AND (%(finished_after)s::timestamptz IS NULL OR finished_at >= %(finished_after)s::timestamptz)
   AND (%(finished_before)s::timestamptz IS NULL OR finished_at < %(finished_before)s::timestamptz)
   AND (%(cursor)s::bigint IS NULL OR task_id < %(cursor)s::bigint)"""
CONSOLE_TASKS_PAGE = f"""
SELECT task_id, task_type, queue, priority, state, attempt_count, max_attempts, scheduled_at,
       created_at, updated_at, finished_at, cancel_requested, idempotency_key,
       current_attempt_worker_id
  FROM taskforge.tf_tasks{_CONSOLE_TASK_FILTER}
 ORDER BY task_id DESC
 LIMIT %(limit)s
"""
# The ids a bulk action by filter applies to (newest first, at most %(limit)s); for a cancel,
# tasks that already carry a cancel request are left out (%(skip_cancel_requested)s).
CONSOLE_TASK_IDS = f"""
SELECT task_id
  FROM taskforge.tf_tasks{_CONSOLE_TASK_FILTER}
   AND NOT (%(skip_cancel_requested)s AND cancel_requested)
 ORDER BY task_id DESC
 LIMIT %(limit)s
"""
# How many tasks match, counting at most %(limit)s (the confirmation step of a bulk action).
CONSOLE_COUNT_MATCHING = f"""
SELECT count(*) FROM (SELECT 1 FROM taskforge.tf_tasks{_CONSOLE_TASK_FILTER}
   AND NOT (%(skip_cancel_requested)s AND cancel_requested)
 LIMIT %(limit)s) AS matching
"""
# Which of these ids exist (a bulk action by ids reports the others as not found).
CONSOLE_EXISTING_TASK_IDS = "SELECT task_id FROM taskforge.tf_tasks WHERE task_id = ANY(%(task_ids)s::bigint[])"
# Bulk actions in one statement (ids in ascending order, so concurrent calls lock in one order).
# A refusal (TF4xx) aborts the statement; the console then goes one id at a time.
CONSOLE_CANCEL_MANY = """
SELECT t.task_id, c.task_state, c.cancel_requested
  FROM unnest(%(task_ids)s::bigint[]) WITH ORDINALITY AS t(task_id, n)
 CROSS JOIN LATERAL taskforge.tf_cancel(task_id => t.task_id, reason => %(reason)s) AS c
 ORDER BY t.n
"""
CONSOLE_RETRY_MANY = """
SELECT t.task_id, r.task_state, r.max_attempts
  FROM unnest(%(task_ids)s::bigint[]) WITH ORDINALITY AS t(task_id, n)
 CROSS JOIN LATERAL taskforge.tf_retry(task_id => t.task_id, extra_attempts => %(extra_attempts)s) AS r
 ORDER BY t.n
"""
CONSOLE_WORKER_COUNTS = "SELECT liveness, count(*) FROM taskforge.tf_workers GROUP BY liveness"
# /metrics: attempts finished in the last %(window_seconds)s seconds per queue and outcome, and
# the recovery lag of the attempts abandoned in that window (both along attempts_finished_idx).
CONSOLE_METRICS_ATTEMPTS = """
SELECT queue, outcome, count(*)
  FROM taskforge.tf_attempts
 WHERE finished_at >= now() - make_interval(secs => %(window_seconds)s)
 GROUP BY queue, outcome
"""
CONSOLE_METRICS_RECOVERY_LAG = """
SELECT queue, recovery_lag_seconds
  FROM taskforge.tf_attempts
 WHERE finished_at >= now() - make_interval(secs => %(window_seconds)s) AND state = 'ABANDONED'
"""

# --- demo (taskforge.demo) ------------------------------------------------------------------------
# Only ever sent to the demo's own embedded server (never to a database named by a DSN).
DEMO_EMBEDDED_DROP_DATABASE = "DROP DATABASE IF EXISTS taskforge_demo WITH (FORCE)"
DEMO_EMBEDDED_CREATE_DATABASE = "CREATE DATABASE taskforge_demo"
# The any-language path, exactly as a psql user would type it (named arguments).
DEMO_PLAIN_SQL_SUBMIT = """
SELECT * FROM taskforge.tf_submit(task_type => 'echo',
                                  payload => '{"via": "plain SQL", "lang": "any"}',
                                  queue => %(queue)s, priority => 3)
"""
DEMO_PLAIN_SQL_SUBMIT_SLEEP = """
SELECT * FROM taskforge.tf_submit(task_type => 'sleep', payload => '{"ms": 300}',
                                  queue => %(queue)s, max_attempts => 2)
"""
DEMO_PLAIN_SQL_SUBMIT_FAIL_ONCE = """
SELECT * FROM taskforge.tf_submit(task_type => 'fail_once', queue => %(queue)s)
"""

# --- console benchmark data set (taskforge.benchmarks.console_data) ------------------------------
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
# bench/console_bench.py: the login role the console connects as ({name}: psycopg.sql.Identifier),
# and the newest task that needed a second attempt (its page shows two attempts and an error).
CONSOLE_BENCH_CREATE_ROLE = "CREATE ROLE {name} LOGIN IN ROLE taskforge_console"
CONSOLE_BENCH_DROP_ROLE = "DROP ROLE IF EXISTS {name}"
CONSOLE_BENCH_END_ROLE_SESSIONS = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %(role)s"
CONSOLE_BENCH_A_RETRIED_TASK = """
SELECT task_id FROM taskforge.tf_attempts WHERE attempt_number = 2 ORDER BY task_id DESC LIMIT 1
"""

# --- benchmarks (taskforge.benchmarks: `taskforge bench`) --------------------------------------
# Sent only to throwaway databases the harness creates (taskforge_bench_<hex>) and to the admin
# database that creates them. {name} is filled with psycopg.sql.Identifier.
BENCH_CREATE_DATABASE = "CREATE DATABASE {name}"
BENCH_DROP_DATABASE = "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
BENCH_SERVER_VERSION = "SELECT version(), current_setting('server_version_num')::int"
BENCH_SETTINGS = "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%(names)s) ORDER BY name"
# E5: a fixed retry delay (base = cap, no jitter).
BENCH_REGISTER_FIXED_BACKOFF = """
SELECT taskforge.tf_register_task_type(%(task_type)s, backoff_base_seconds => %(seconds)s,
                                       backoff_cap_seconds => %(seconds)s, backoff_jitter => 0)
"""
BENCH_SUBMIT = """
SELECT task_id FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, queue => %(queue)s)
"""
BENCH_LIVE_WORKER_PIDS = "SELECT pid FROM taskforge.tf_workers WHERE liveness = 'alive' AND pid = ANY(%(pids)s)"
BENCH_TERMINAL_COUNT = """
SELECT count(*) FROM taskforge.tasks
 WHERE task_id = ANY(%(task_ids)s) AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
"""
# E6: process ids of the workers that own RUNNING measured tasks (kill candidates).
BENCH_RUNNING_OWNER_PIDS = """
SELECT DISTINCT w.pid
  FROM taskforge.tasks t JOIN taskforge.workers w ON w.worker_id = t.owner_worker_id
 WHERE t.state = 'RUNNING' AND t.task_id = ANY(%(task_ids)s)
"""
BENCH_TASKS = """
SELECT task_id, state, attempt_count, created_at FROM taskforge.tasks
 WHERE task_id = ANY(%(task_ids)s) ORDER BY task_id
"""
BENCH_ATTEMPTS = """
SELECT task_id, attempt_number, state, started_at, lease_expires_at, finished_at FROM taskforge.attempts
 WHERE task_id = ANY(%(task_ids)s) ORDER BY task_id, attempt_number
"""
# After a drain: RUNNING tasks, tasks with an owner or lease, RUNNING attempts (all must be 0).
BENCH_LEFTOVERS = """
SELECT (SELECT count(*) FROM taskforge.tasks WHERE state = 'RUNNING'),
       (SELECT count(*) FROM taskforge.tasks WHERE owner_worker_id IS NOT NULL OR lease_expires_at IS NOT NULL),
       (SELECT count(*) FROM taskforge.attempts WHERE state = 'RUNNING')
"""
# Long transactions (benchmarks/longtx.py): the holder's first read takes its REPEATABLE READ
# snapshot; at the end, that snapshot's age in transactions.
BENCH_LONGTX_TAKE_SNAPSHOT = "SELECT count(*) FROM taskforge.tasks"
BENCH_LONGTX_HOLDER_AGE = "SELECT max(xmin_age) FROM taskforge.tf_snapshot_holders WHERE name = %(name)s"
BENCH_FUNCTION_EXISTS = "SELECT to_regproc(%(name)s) IS NOT NULL"
BENCH_VACUUM_ANALYZE = "VACUUM ANALYZE"
# Ceiling (a): fill the scratch queue of bench/pgbench/skip_locked_setup.sql.
BENCH_CEILING_FILL_QUEUE = "INSERT INTO bench_queue (payload) SELECT '{}'::jsonb FROM generate_series(1, %(rows)s)"
BENCH_CEILING_QUEUE_LEFT = "SELECT count(*) FROM bench_queue WHERE state = 'queued'"
BENCH_CEILING_QUEUE_DONE = "SELECT count(*) FROM bench_queue WHERE state = 'done'"
# Ceiling (b)/(c): one registered worker per pgbench client (bench/pgbench/taskforge_setup.sql)
# and the noop tasks they drain (the payload names g, so tf_submit runs once per row, not once).
BENCH_CEILING_REGISTER_WORKERS = """
INSERT INTO bench_pgbench_workers (client_id, worker_id)
SELECT g, taskforge.tf_register_worker(name => 'pgbench-' || g) FROM generate_series(0, %(clients)s - 1) AS g
"""
BENCH_CEILING_SUBMIT_NOOPS = """
SELECT count(*) FROM generate_series(1, %(rows)s) AS g
 CROSS JOIN LATERAL taskforge.tf_submit(task_type => 'noop', queue => 'bench',
                                        payload => jsonb_build_object('n', g)) AS s
"""
BENCH_CEILING_TASKFORGE_LEFT = "SELECT count(*) FROM taskforge.tasks WHERE state = 'QUEUED' AND queue = 'bench'"
BENCH_CEILING_TASKFORGE_DONE = "SELECT count(*) FROM taskforge.tasks WHERE state = 'SUCCEEDED' AND queue = 'bench'"
# The peers' statements (their own tables, in their own throwaway databases) live with each peer,
# in taskforge.benchmarks.peers.
