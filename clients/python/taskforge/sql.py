"""Every SQL statement the library sends at run time, in one place: the client
(:mod:`taskforge.calls`), the worker, the scheduler, migrations and the console.

Statements call the public ``taskforge.tf_*`` functions with named arguments (``=>``) or read
the ``taskforge.tf_*`` views. Placeholders are psycopg's ``%(name)s``. Keep statements here so
a DBA can audit what the clients send by reading one file. What only the tooling sends lives
beside it: the demo's in :mod:`taskforge.demo`, the benchmarks' in
:mod:`taskforge.benchmarks.statements` (and the data set's in
:mod:`taskforge.benchmarks.console_data`), test data in ``tests/helpers``.
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

# --- admission (clients) ----------------------------------------------------------------------
# Every parameter of tf_submit (the keys of taskforge.submission.SubmitRequest); delay_seconds is
# added to the database's clock by tf_submit itself.
SUBMIT = """
SELECT task_id, state, created
  FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, queue => %(queue)s,
                           priority => %(priority)s, max_attempts => %(max_attempts)s,
                           scheduled_at => %(scheduled_at)s, idempotency_key => %(idempotency_key)s,
                           timeout_seconds => %(timeout_seconds)s, delay_seconds => %(delay_seconds)s,
                           notify_finished => %(notify_finished)s, traceparent => %(traceparent)s,
                           depends_on => %(depends_on)s::bigint[], rate_key => %(rate_key)s,
                           concurrency_key => %(concurrency_key)s, ordering_key => %(ordering_key)s)
"""
CANCEL = "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %(task_id)s, reason => %(reason)s)"
RETRY = (
    "SELECT task_state, max_attempts"
    " FROM taskforge.tf_retry(task_id => %(task_id)s, extra_attempts => %(extra_attempts)s)"
)

# tf_submit_many: %(requests)s is a jsonb array of request objects (tf_submit's parameter names).
SUBMIT_MANY = "SELECT task_id, state, created FROM taskforge.tf_submit_many(requests => %(requests)s)"

# --- dependencies and flow control (clients; docs/workflows.md, docs/flow-control.md) ----------------
# A task's edges both ways: its parents (child_task_id = the task) and its children.
DEPENDENCIES = """
SELECT child_task_id, child_task_type, child_state, child_parents_pending, parent_task_id, parent_task_type,
       parent_state, parent_result, parent_finished_at
  FROM taskforge.tf_task_dependencies
 WHERE child_task_id = %(task_id)s OR parent_task_id = %(task_id)s
 ORDER BY child_task_id, parent_task_id
"""
SET_RATE_LIMIT = (
    "SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit("
    "rate_key => %(rate_key)s, per_second => %(per_second)s, burst => %(burst)s)"
)
SET_CONCURRENCY_LIMIT = (
    "SELECT taskforge.tf_set_concurrency_limit(concurrency_key => %(concurrency_key)s,"
    " max_running => %(max_running)s) AS previous"
)
RATE_LIMITS = """
SELECT rate_key, per_second, burst, tokens_now, queued, refilled_at, created_at, updated_at
  FROM taskforge.tf_rate_limits ORDER BY rate_key
"""
CONCURRENCY_KEYS = """
SELECT concurrency_key, max_running, running, queued, last_claimed_at, created_at, updated_at
  FROM taskforge.tf_concurrency_keys ORDER BY concurrency_key
"""

# --- periodic schedules (clients) ---------------------------------------------------------------
SCHEDULE_PERIODIC = """
SELECT next_fire_at, created
  FROM taskforge.tf_schedule_periodic(name => %(name)s, cron => %(cron)s, task_type => %(task_type)s,
                                      payload => %(payload)s, queue => %(queue)s, priority => %(priority)s,
                                      max_attempts => %(max_attempts)s, timezone => %(timezone)s)
"""
UNSCHEDULE_PERIODIC = "SELECT taskforge.tf_unschedule_periodic(name => %(name)s) AS removed"
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
# ctx.parent_results: the parents of a held attempt's task (fencing token as tf_renew).
PARENT_RESULTS = (
    "SELECT parent_task_id, state, result FROM taskforge.tf_parent_results("
    "task_id => %(task_id)s, worker_id => %(worker_id)s, attempt_number => %(attempt_number)s)"
)
# tf_claim alone: the worker claims with FINALIZE_AND_CLAIM; this is the single-call form the
# long-transaction benchmark and the tests' helpers send.
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
       priority, max_attempts, timeout_seconds, traceparent
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
# The partitioned history (docs/operations.md, "Partitioned history"): the one-time conversion,
# and its ranges (no rows on the default layout).
PARTITION_HISTORY = (
    "SELECT taskforge.tf_partition_history(tasks_per_partition => %(tasks_per_partition)s, "
    "partitions_ahead => %(partitions_ahead)s)"
)
HISTORY_RANGES = (
    "SELECT partition_no, first_task_id, end_task_id FROM taskforge.history_partitions ORDER BY end_task_id"
)
PRUNE = "SELECT taskforge.tf_prune(older_than_seconds => %(older_than_seconds)s, max_tasks => %(max_tasks)s)"
# Retention of process records, after PRUNE (attempts keep their worker's row until then).
PRUNE_WORKERS = """
SELECT workers, schedulers
  FROM taskforge.tf_prune_workers(older_than_seconds => %(older_than_seconds)s, max_rows => %(max_rows)s)
"""
# The scheduler's liveness beat (every heartbeat_seconds; stopping on a clean stop).
SCHEDULER_HEARTBEAT = """
SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %(scheduler_id)s, name => %(name)s, hostname => %(hostname)s,
                                        pid => %(pid)s, heartbeat_seconds => %(heartbeat_seconds)s,
                                        stopping => %(stopping)s)
"""
# Before each scheduler pass, in a transaction of its own (making a range locks tasks, attempts,
# workers and task_types until commit): the partitioned history's ranges ahead; on the default
# layout it reads one empty table.
MAKE_PARTITIONS = "SELECT taskforge.tf_make_partitions()"
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
       current_attempt_finished_at, notify_finished, traceparent, parents_pending, has_children, rate_key,
       concurrency_key, ordering_key"""
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
SELECT queue, paused, paused_at, max_running, queued, due, running, retrying, oldest_due_at, oldest_due_age_seconds,
       aging_per_second
  FROM taskforge.tf_queues
 ORDER BY queue
"""
# Waiting for a task's end (taskforge.waiting): channel, listen state and the one-column read.
LISTENING_FINISHED = "SELECT 'taskforge_finished' = ANY(ARRAY(SELECT pg_listening_channels()))"
LISTEN_FINISHED = "LISTEN taskforge_finished"
UNLISTEN_FINISHED = "UNLISTEN taskforge_finished"
TASK_STATE = "SELECT state FROM taskforge.tf_tasks WHERE task_id = %(task_id)s"
PAUSE_QUEUE = "SELECT taskforge.tf_pause_queue(queue => %(queue)s) AS changed"
RESUME_QUEUE = "SELECT taskforge.tf_resume_queue(queue => %(queue)s) AS changed"
SET_QUEUE_LIMIT = "SELECT taskforge.tf_set_queue_limit(queue => %(queue)s, max_running => %(max_running)s) AS previous"
SET_QUEUE_AGING = (
    "SELECT taskforge.tf_set_queue_aging(queue => %(queue)s, priority_per_second => %(priority_per_second)s)"
    " AS previous"
)
THROUGHPUT = """
SELECT window_seconds, queue, attempts_finished, attempts_succeeded, attempts_failed,
       succeeded_per_second, run_p50_seconds, run_p95_seconds, wait_p50_seconds, wait_p95_seconds
  FROM taskforge.tf_throughput
 ORDER BY window_seconds, queue
"""

# --- console (taskforge_console) -----------------------------------------------------------------
# The console's settings: the time limit %(ms)s; no JIT (every console query is short, and
# compiling costs 10-20 ms per statement); work_mem for the per-minute sort. %(local)s false:
# for the whole session of a pooled connection (the read limit); true: for one transaction (an
# action's limit, and every read behind a transaction-mode pooler).
CONSOLE_SESSION_SETTINGS = """
SELECT set_config('statement_timeout', %(ms)s, %(local)s), set_config('jit', 'off', %(local)s),
       set_config('work_mem', '16MB', %(local)s)
"""
# The console's read replica (a hot standby, --read-dsn): is it one, is its WAL receiver streaming,
# and how far its replay is behind. The replay timestamp is that of the last transaction replayed,
# so now() minus it grows while the primary is idle: lag_seconds is 0 while the receiver streams
# and everything received is replayed; else (replay behind, or no receiver) the age of the last
# replayed transaction (NULL before the first one). lag_bytes: WAL received, not yet replayed.
# Every function here is readable by any role (pg_stat_wal_receiver shows a row, pid only, to
# roles without pg_read_all_stats).
CONSOLE_REPLICA_STATUS = """
SELECT s.in_recovery, s.streaming,
       CASE WHEN NOT s.in_recovery THEN 0.0
            WHEN s.streaming AND s.received <= s.replayed THEN 0.0
            ELSE greatest(0.0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()))::float8
       END AS lag_seconds,
       coalesce(greatest(0, pg_wal_lsn_diff(s.received, s.replayed)), 0)::float8 AS lag_bytes
  FROM (SELECT pg_is_in_recovery() AS in_recovery, EXISTS (SELECT FROM pg_stat_wal_receiver) AS streaming,
               pg_last_wal_receive_lsn() AS received, pg_last_wal_replay_lsn() AS replayed) AS s
"""
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
# /metrics: what vacuum sees of each TaskForge table (the server's statistics: dead tuples are
# what autovacuum has not removed yet) and the oldest snapshot holding vacuum back in this database.
CONSOLE_METRICS_TABLES = """
SELECT s.relname::text, s.n_live_tup, s.n_dead_tup, pg_catalog.pg_table_size(s.relid),
       pg_catalog.pg_indexes_size(s.relid),
       extract(epoch FROM now() - greatest(s.last_vacuum, s.last_autovacuum))::float8
  FROM pg_catalog.pg_stat_user_tables s
 WHERE s.schemaname = 'taskforge'
 ORDER BY s.relname
"""
CONSOLE_METRICS_OLDEST_SNAPSHOT = """
SELECT coalesce(max(xmin_age), 0)::bigint, coalesce(max(held_seconds), 0)::float8
  FROM taskforge.tf_snapshot_holders
"""
CONSOLE_METRICS_RECOVERY_LAG = """
SELECT queue, recovery_lag_seconds
  FROM taskforge.tf_attempts
 WHERE finished_at >= now() - make_interval(secs => %(window_seconds)s) AND state = 'ABANDONED'
"""

# The console's dependency and flow-control reads (taskforge_console.queries).
# A task's parents and its children, at most %(limit)s of each (plus one, to tell "more"). No
# ORDER BY: a task with many children stops after the limit instead of sorting them all; the
# caller sorts by id.
CONSOLE_FLOW_PARENTS = """
SELECT parent_task_id AS task_id, parent_task_type AS task_type, parent_state AS state,
       parent_finished_at AS finished_at
  FROM taskforge.tf_task_dependencies
 WHERE child_task_id = %(task_id)s::bigint
 LIMIT %(limit)s
"""
CONSOLE_FLOW_CHILDREN = """
SELECT child_task_id AS task_id, child_task_type AS task_type, child_state AS state,
       child_parents_pending AS parents_pending
  FROM taskforge.tf_task_dependencies
 WHERE parent_task_id = %(task_id)s::bigint
 LIMIT %(limit)s
"""
# The tasks connected to %(task_id)s by dependency edges in either direction, breadth first
# (a recursive UNION runs one step per level and keeps each task once), at most %(limit)s: the
# LIMIT stops the recursion once enough tasks are found. Each step looks the edges of the tasks
# of the step before up by key (the primary key from the child, task_dependencies_parent_idx
# from the parent).
CONSOLE_FLOW_COMPONENT_TASKS = """
WITH RECURSIVE found(task_id) AS (
    SELECT %(task_id)s::bigint
  UNION
    SELECT n.task_id
      FROM found f
     CROSS JOIN LATERAL (
        SELECT d.parent_task_id AS task_id FROM taskforge.tf_task_dependencies d WHERE d.child_task_id = f.task_id
        UNION ALL
        SELECT d.child_task_id FROM taskforge.tf_task_dependencies d WHERE d.parent_task_id = f.task_id
     ) AS n
)
SELECT task_id FROM found LIMIT %(limit)s
"""
# The edges among %(ids)s, with both tasks' type and state.
CONSOLE_FLOW_EDGES_AMONG = """
SELECT parent_task_id, parent_task_type, parent_state, child_task_id, child_task_type, child_state
  FROM taskforge.tf_task_dependencies
 WHERE child_task_id = ANY(%(ids)s::bigint[]) AND parent_task_id = ANY(%(ids)s::bigint[])
"""
CONSOLE_FLOW_RATE_LIMITS = """
SELECT rate_key, per_second, burst, tokens_now, queued, refilled_at, created_at, updated_at
  FROM taskforge.tf_rate_limits
 ORDER BY rate_key
 LIMIT %(limit)s
"""
CONSOLE_FLOW_CONCURRENCY_KEYS = """
SELECT concurrency_key, max_running, running, queued, last_claimed_at, created_at, updated_at
  FROM taskforge.tf_concurrency_keys
 ORDER BY concurrency_key
 LIMIT %(limit)s
"""
