"""Every statement of ``taskforge bench`` (:mod:`taskforge.benchmarks`) that the library itself
does not send: measurements, bookkeeping and the ceilings' scratch tables.

Sent only to throwaway databases the harness creates (``taskforge_bench_<hex>``) and to the admin
database that creates them. ``{name}`` is filled with ``psycopg.sql.Identifier``. The statements
of the workloads themselves (submit, claim, finalize) are the library's, in :mod:`taskforge.sql`;
the peers' (their own tables, in their own throwaway databases) live with each peer, in
:mod:`taskforge.benchmarks.peers`.
"""

from __future__ import annotations

# The database's clock, for an instant to compare with its timestamps (E6's kill time).
BENCH_DB_NOW = "SELECT clock_timestamp()"

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
# tf_claim on its own (the worker claims with tf_finalize_and_claim): longtx's claimers, the tests.
BENCH_CLAIM = """
SELECT task_id, attempt_number, task_type, payload, queue, priority, max_attempts, lease_expires_at,
       timeout_seconds, traceparent
  FROM taskforge.tf_claim(worker_id => %(worker_id)s, queues => %(queues)s,
                          lease_seconds => %(lease_seconds)s, max_tasks => %(max_tasks)s,
                          task_types => %(task_types)s)
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

# The soak (benchmarks/soak.py), sampled every few seconds on its private server.
# The database clock, and the successful attempts finished in (after, until]: the throughput.
BENCH_SOAK_FINISHED = """
SELECT count(*) FROM taskforge.attempts
 WHERE finished_at > %(after)s AND finished_at <= %(until)s AND state = 'SUCCEEDED'
"""
# Every TaskForge table's statistics and sizes (bytes), vacuum counters included.
BENCH_SOAK_TABLES = """
SELECT s.relname::text, s.n_live_tup, s.n_dead_tup, pg_catalog.pg_table_size(s.relid),
       pg_catalog.pg_indexes_size(s.relid), s.autovacuum_count, s.vacuum_count, s.n_tup_ins
  FROM pg_catalog.pg_stat_user_tables s
 WHERE s.schemaname = 'taskforge'
 ORDER BY s.relname
"""
# Index entries read (idx_tup_read) and scans of each index of taskforge.tasks, cumulative.
BENCH_SOAK_TASK_INDEXES = """
SELECT indexrelname::text, idx_tup_read, idx_scan
  FROM pg_catalog.pg_stat_user_indexes
 WHERE schemaname = 'taskforge' AND relname = 'tasks'
"""
# The oldest snapshot holding vacuum back (transactions) and the QUEUED backlog.
BENCH_SOAK_XMIN_AND_BACKLOG = """
SELECT (SELECT coalesce(max(xmin_age), 0)::bigint FROM taskforge.tf_snapshot_holders),
       (SELECT count(*) FROM taskforge.tasks WHERE state = 'QUEUED')
"""
# The peak phase's span (database clock) and, after the soak, what is still to be done.
BENCH_SOAK_SPAN = """
SELECT min(started_at), max(finished_at) FROM taskforge.attempts WHERE task_id = ANY(%(task_ids)s)
"""
BENCH_SOAK_UNFINISHED = "SELECT count(*) FROM taskforge.tasks WHERE state IN ('QUEUED', 'RUNNING', 'RETRYING')"
