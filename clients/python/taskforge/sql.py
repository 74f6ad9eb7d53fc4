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
                           scheduled_at => %(scheduled_at)s, idempotency_key => %(idempotency_key)s)
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
                           idempotency_key => %(idempotency_key)s)
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
DB_NOW = "SELECT clock_timestamp()"
# The scheduler's liveness beat (every heartbeat_seconds; stopping on a clean stop).
SCHEDULER_HEARTBEAT = """
SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %(scheduler_id)s, name => %(name)s, hostname => %(hostname)s,
                                        pid => %(pid)s, heartbeat_seconds => %(heartbeat_seconds)s,
                                        stopping => %(stopping)s)
"""
# One scheduler pass (taskforge.scheduler): recover, then promote, in one round trip. The time
# left until the next lease deadline and the next backoff end is computed by the database
# (seconds, negative when already past, NULL when there is none), so the scheduler never
# compares its own clock with a database timestamp.
SCHEDULER_TICK = """
SELECT r.recovered, r.failed, p.promoted,
       extract(epoch FROM r.next_lease_expiry - clock_timestamp())::double precision AS seconds_to_lease_expiry,
       extract(epoch FROM p.next_due_at - clock_timestamp())::double precision AS seconds_to_next_due
  FROM taskforge.tf_recover(max_tasks => %(max_tasks)s) AS r
 CROSS JOIN LATERAL taskforge.tf_promote(max_tasks => %(max_tasks)s) AS p
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
TASKS_LIST = f"""
SELECT {_TASK_COLUMNS}
  FROM taskforge.tf_tasks
 WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
   AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
   AND (%(task_type)s::text IS NULL OR task_type = %(task_type)s::text)
 ORDER BY task_id DESC
 LIMIT %(limit)s
"""
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
BENCH_FUNCTION_EXISTS = "SELECT to_regproc(%(name)s) IS NOT NULL"
BENCH_VACUUM_ANALYZE = "VACUUM ANALYZE"
# Ceiling (a): fill the scratch queue of bench/pgbench/skip_locked_setup.sql.
BENCH_CEILING_FILL_QUEUE = "INSERT INTO bench_queue (payload) SELECT '{}'::jsonb FROM generate_series(1, %(rows)s)"
BENCH_CEILING_QUEUE_LEFT = "SELECT count(*) FROM bench_queue WHERE state = 'queued'"
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
# Peer (procrastinate's own tables, in the peer's database).
BENCH_PEER_WORKERS = "SELECT count(*) FROM procrastinate_workers"
BENCH_PEER_DONE = """
SELECT count(*) FROM procrastinate_jobs
 WHERE id = ANY(%(job_ids)s) AND status IN ('succeeded', 'failed', 'cancelled', 'aborted')
"""
BENCH_PEER_STATUS = "SELECT status::text, count(*) FROM procrastinate_jobs WHERE id = ANY(%(job_ids)s) GROUP BY 1"
# Span of the measured jobs from procrastinate's own events: first 'started', last 'succeeded'.
BENCH_PEER_SPAN = """
SELECT min(at) FILTER (WHERE type = 'started'), max(at) FILTER (WHERE type = 'succeeded'),
       count(*) FILTER (WHERE type = 'started'), count(*) FILTER (WHERE type = 'succeeded')
  FROM procrastinate_events WHERE job_id = ANY(%(job_ids)s)
"""
