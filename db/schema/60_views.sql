-- The read surface (docs/design.md §6). The console and dashboards read these views only. Views run
-- with the privileges of their owner (taskforge_owner), so readers need SELECT on the view and
-- nothing on the tables. Liveness and ages are computed from database time (now()). Columns of
-- a domain type (15_domains.sql) are given as their base type (text, int, jsonb), so a view
-- reads like the functions' results.

-- Tasks with their current (latest) attempt.
CREATE VIEW taskforge.tf_tasks AS
SELECT t.task_id, t.task_type, t.queue::text AS queue, t.priority::int AS priority, t.state::text AS state,
       t.attempt_count, t.max_attempts::int AS max_attempts, t.max_attempts - t.attempt_count AS attempts_left,
       t.scheduled_at, t.created_at, t.updated_at, t.finished_at,
       t.owner_worker_id, t.lease_expires_at,
       t.cancel_requested_at IS NOT NULL AS cancel_requested, t.cancel_reason,
       t.idempotency_key::text AS idempotency_key, encode(t.fingerprint, 'hex') AS fingerprint,
       t.payload::jsonb AS payload, t.result, t.last_error,
       a.state::text AS current_attempt_state, a.worker_id AS current_attempt_worker_id,
       a.started_at AS current_attempt_started_at, a.finished_at AS current_attempt_finished_at,
       t.timeout_seconds, t.deadline_at, t.notify_finished, t.traceparent::text AS traceparent,
       t.parents_pending, t.has_children, t.rate_key::text AS rate_key,
       t.concurrency_key::text AS concurrency_key, t.ordering_key::text AS ordering_key
  FROM taskforge.tasks t
  LEFT JOIN taskforge.attempts a ON a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
COMMENT ON VIEW taskforge.tf_tasks IS 'Tasks with their current (latest) attempt.';

-- Dependency edges with both ends' states (tf_submit's depends_on): a child's parents and their
-- results (what a handler reads as its parents' results), a parent's children.
CREATE VIEW taskforge.tf_task_dependencies AS
SELECT d.child_task_id, c.task_type AS child_task_type, c.state::text AS child_state,
       c.parents_pending AS child_parents_pending,
       d.parent_task_id, p.task_type AS parent_task_type, p.state::text AS parent_state,
       p.result AS parent_result, p.finished_at AS parent_finished_at
  FROM taskforge.task_dependencies d
  JOIN taskforge.tasks c ON c.task_id = d.child_task_id
  JOIN taskforge.tasks p ON p.task_id = d.parent_task_id;
COMMENT ON VIEW taskforge.tf_task_dependencies IS
    'Dependency edges (child waits for parent) with both tasks'' type and state, and the parent''s result.';

-- Flow-control settings with their live counts (docs/flow-control.md): rate limits with the
-- tokens available now (database time), and concurrency keys with their RUNNING and QUEUED tasks.
CREATE VIEW taskforge.tf_rate_limits AS
SELECT r.rate_key::text AS rate_key, r.per_second, r.burst,
       least(r.burst::double precision,
             r.tokens + r.per_second * greatest(0, extract(epoch FROM now() - r.refilled_at)::double precision))
           AS tokens_now,
       (SELECT count(*) FROM taskforge.tasks t WHERE t.state = 'QUEUED' AND t.keyed AND t.rate_key = r.rate_key)
           AS queued,
       r.refilled_at, r.created_at, r.updated_at
  FROM taskforge.rate_limits r;
COMMENT ON VIEW taskforge.tf_rate_limits IS
    'Rate limits per rate key: per_second, burst, tokens available now (database time), QUEUED tasks of the key.';
CREATE VIEW taskforge.tf_concurrency_keys AS
SELECT k.concurrency_key::text AS concurrency_key, k.max_running,
       (SELECT count(*) FROM taskforge.tasks t
         WHERE t.state = 'RUNNING' AND t.concurrency_key = k.concurrency_key) AS running,
       (SELECT count(*) FROM taskforge.tasks t
         WHERE t.state = 'QUEUED' AND t.concurrency_key = k.concurrency_key) AS queued,
       k.last_claimed_at, k.created_at, k.updated_at
  FROM taskforge.concurrency_keys k;
COMMENT ON VIEW taskforge.tf_concurrency_keys IS
    'Concurrency keys: max_running (NULL = unlimited), RUNNING and QUEUED counts, when a claim last started one (fair rotation).';

-- Attempt history, with durations and (for ABANDONED) the recovery lag after lease expiry.
CREATE VIEW taskforge.tf_attempts AS
SELECT a.task_id, a.attempt_number::int AS attempt_number, t.task_type, t.queue::text AS queue, a.worker_id,
       w.name AS worker_name, a.state::text AS state, a.outcome::text AS outcome, a.started_at,
       a.lease_expires_at, a.finished_at,
       CASE WHEN a.state = 'ABANDONED' THEN a.finished_at END AS abandoned_at,
       extract(epoch FROM a.finished_at - a.started_at)::double precision AS duration_seconds,
       CASE WHEN a.state = 'ABANDONED'
            THEN extract(epoch FROM a.finished_at - a.lease_expires_at)::double precision END
           AS recovery_lag_seconds,
       a.result, a.error, a.deadline_at
  FROM taskforge.attempts a
  JOIN taskforge.tasks t ON t.task_id = a.task_id
  LEFT JOIN taskforge.workers w ON w.worker_id = a.worker_id;
COMMENT ON VIEW taskforge.tf_attempts IS
    'Attempt history; recovery_lag_seconds = abandoned_at - lease_expires_at for ABANDONED attempts.';

-- Workers with liveness from database time: stopped (deregistered), stale (three missed
-- heartbeats), or alive.
CREATE VIEW taskforge.tf_workers AS
SELECT w.worker_id, w.name, w.hostname, w.pid, w.queues, w.task_types, w.heartbeat_seconds,
       w.started_at, w.last_heartbeat_at, w.stopped_at,
       extract(epoch FROM now() - w.last_heartbeat_at)::double precision AS seconds_since_heartbeat,
       CASE WHEN w.stopped_at IS NOT NULL THEN 'stopped'
            WHEN now() - w.last_heartbeat_at > make_interval(secs => 3 * w.heartbeat_seconds) THEN 'stale'
            ELSE 'alive' END AS liveness,
       (SELECT count(*) FROM taskforge.tasks t
         WHERE t.owner_worker_id = w.worker_id AND t.state = 'RUNNING') AS running_tasks
  FROM taskforge.workers w;
COMMENT ON VIEW taskforge.tf_workers IS
    'Workers with liveness (alive | stale after 3 missed heartbeats | stopped) from database time.';

-- Schedulers with liveness from database time, by the rule of tf_workers: stopped (its last
-- beat said so), stale (three missed heartbeats), or alive.
CREATE VIEW taskforge.tf_schedulers AS
SELECT s.scheduler_id, s.name, s.hostname, s.pid, s.heartbeat_seconds,
       s.started_at, s.last_heartbeat_at, s.stopped_at,
       extract(epoch FROM now() - s.last_heartbeat_at)::double precision AS seconds_since_heartbeat,
       CASE WHEN s.stopped_at IS NOT NULL THEN 'stopped'
            WHEN now() - s.last_heartbeat_at > make_interval(secs => 3 * s.heartbeat_seconds) THEN 'stale'
            ELSE 'alive' END AS liveness
  FROM taskforge.schedulers s;
COMMENT ON VIEW taskforge.tf_schedulers IS
    'Schedulers with liveness (alive | stale after 3 missed heartbeats | stopped) from database time.';

-- Registered task types (tf_submit accepts only these) with their retry backoff policy (seconds),
-- for forms and tools that offer a choice of type.
CREATE VIEW taskforge.tf_task_types AS
SELECT tt.task_type, tt.backoff_base_seconds, tt.backoff_cap_seconds, tt.backoff_jitter, tt.description,
       tt.created_at, tt.updated_at
  FROM taskforge.task_types tt;
COMMENT ON VIEW taskforge.tf_task_types IS
    'Registered task types with their backoff policy (base, cap in seconds; jitter 0..1) and description.';

-- Counts per queue and state (every state appears for every queue that has tasks).
CREATE VIEW taskforge.tf_queue_stats AS
SELECT q.queue::text AS queue, s.state, coalesce(c.tasks, 0) AS tasks,
       c.oldest_created_at
  FROM (SELECT DISTINCT queue FROM taskforge.tasks) q
 CROSS JOIN (VALUES ('BLOCKED'), ('QUEUED'), ('RUNNING'), ('RETRYING'), ('SUCCEEDED'), ('FAILED'),
                    ('CANCELLED')) s(state)
  LEFT JOIN (SELECT t.queue, t.state::text AS state, count(*) AS tasks, min(t.created_at) AS oldest_created_at
               FROM taskforge.tasks t GROUP BY t.queue, t.state) c
         ON c.queue = q.queue AND c.state = s.state;
COMMENT ON VIEW taskforge.tf_queue_stats IS 'Task counts per queue and state.';

-- Queues that have live work (QUEUED, RUNNING or RETRYING tasks) or a control row (paused or
-- limited), with their controls and live counts. Each state is read through its partial index,
-- so the cost follows live work, not finished history. Ages are from database time (now()).
CREATE VIEW taskforge.tf_queues AS
WITH live AS (
    SELECT t.queue, 'QUEUED' AS state, t.scheduled_at <= now() AS due, t.scheduled_at
      FROM taskforge.tasks t WHERE t.state = 'QUEUED'
    UNION ALL
    SELECT t.queue, 'RUNNING', false, NULL FROM taskforge.tasks t WHERE t.state = 'RUNNING'
    UNION ALL
    SELECT t.queue, 'RETRYING', false, NULL FROM taskforge.tasks t WHERE t.state = 'RETRYING'
), counts AS (
    SELECT l.queue,
           count(*) FILTER (WHERE l.state = 'QUEUED') AS queued,
           count(*) FILTER (WHERE l.due) AS due,
           count(*) FILTER (WHERE l.state = 'RUNNING') AS running,
           count(*) FILTER (WHERE l.state = 'RETRYING') AS retrying,
           min(l.scheduled_at) FILTER (WHERE l.due) AS oldest_due_at
      FROM live l
     GROUP BY l.queue
)
SELECT coalesce(q.queue, c.queue)::text AS queue,
       q.paused_at IS NOT NULL AS paused, q.paused_at, q.max_running,
       coalesce(c.queued, 0) AS queued, coalesce(c.due, 0) AS due,
       coalesce(c.running, 0) AS running, coalesce(c.retrying, 0) AS retrying,
       c.oldest_due_at,
       extract(epoch FROM now() - c.oldest_due_at)::double precision AS oldest_due_age_seconds,
       q.aging_per_second
  FROM taskforge.queues q
  FULL JOIN counts c ON c.queue = q.queue;
COMMENT ON VIEW taskforge.tf_queues IS
    'Queues with live work or a control row: paused, max_running (NULL = unlimited), queued/due/running/retrying counts, oldest due task (age in seconds, database time), aging_per_second (NULL = no priority aging).';

-- Recent throughput and latency per queue over the last 1, 5 and 15 minutes of database time:
-- attempts finished, successes per second, and p50/p95 of attempt run time and of queue wait
-- (first attempt start - task creation).
CREATE VIEW taskforge.tf_throughput AS
SELECT w.window_seconds, t.queue::text AS queue,
       count(*) AS attempts_finished,
       count(*) FILTER (WHERE a.state = 'SUCCEEDED') AS attempts_succeeded,
       count(*) FILTER (WHERE a.state IN ('FAILED', 'ABANDONED')) AS attempts_failed,
       (count(*) FILTER (WHERE a.state = 'SUCCEEDED'))::double precision / w.window_seconds AS succeeded_per_second,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.finished_at - a.started_at)::double precision)
           AS run_p50_seconds,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM a.finished_at - a.started_at)::double precision)
           AS run_p95_seconds,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - t.created_at)::double precision)
           FILTER (WHERE a.attempt_number = 1) AS wait_p50_seconds,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - t.created_at)::double precision)
           FILTER (WHERE a.attempt_number = 1) AS wait_p95_seconds
  FROM (VALUES (60), (300), (900)) w(window_seconds)
  JOIN taskforge.attempts a ON a.finished_at >= now() - make_interval(secs => w.window_seconds)
  JOIN taskforge.tasks t ON t.task_id = a.task_id
 GROUP BY w.window_seconds, t.queue;
COMMENT ON VIEW taskforge.tf_throughput IS
    'Per queue, over the last 60/300/900 s of database time: finished attempts, successes per second, run time and queue wait p50/p95 (seconds).';

-- Periodic schedules with their next and last tick, and the task of the last tick (its state
-- is NULL once tf_prune deleted it).
CREATE VIEW taskforge.tf_periodic AS
SELECT p.name, p.cron, p.timezone, p.task_type, p.queue::text AS queue, p.priority::int AS priority,
       p.max_attempts, p.payload::jsonb AS payload,
       p.next_fire_at, p.last_fire_at, p.last_task_id, t.state::text AS last_task_state,
       p.created_at, p.updated_at
  FROM taskforge.periodic_schedules p
  LEFT JOIN taskforge.tasks t ON t.task_id = p.last_task_id;
COMMENT ON VIEW taskforge.tf_periodic IS
    'Periodic schedules: cron, time zone, the request, next_fire_at, last_fire_at, last_task_id and that task''s state.';

-- The last hour of database time, minute by minute, per queue (the console's charts): attempts
-- finished in each minute, succeeded, failed (FAILED or ABANDONED), and the p50/p95 queue wait
-- (first attempt start - task creation, seconds) of the first attempts that finished in that
-- minute (NULL when none did). minute is the start of the minute, truncated in UTC; the window
-- is the current minute and the 59 before it. A minute in which no attempt of a queue finished
-- has no row. Reads attempts through attempts_finished_idx and each one's task by primary key,
-- so its cost follows the last hour's attempts, not the history.
CREATE VIEW taskforge.tf_throughput_per_minute AS
SELECT date_trunc('minute', a.finished_at, 'UTC') AS minute, t.queue::text AS queue,
       count(*) AS attempts_finished,
       count(*) FILTER (WHERE a.state = 'SUCCEEDED') AS attempts_succeeded,
       count(*) FILTER (WHERE a.state IN ('FAILED', 'ABANDONED')) AS attempts_failed,
       count(*) FILTER (WHERE a.attempt_number = 1) AS first_attempts,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - t.created_at)::double precision)
           FILTER (WHERE a.attempt_number = 1) AS wait_p50_seconds,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - t.created_at)::double precision)
           FILTER (WHERE a.attempt_number = 1) AS wait_p95_seconds
  FROM taskforge.attempts a
 -- One task per attempt, looked up by primary key. LIMIT 1 (task_id is the key, so it and the
 -- ORDER BY change nothing) keeps the lookup per attempt: as a plain join the planner hashes
 -- the whole tasks table once the hour holds some ten thousand attempts (3x slower at a
 -- million tasks, docs/console.md#benchmark).
 CROSS JOIN LATERAL (SELECT t.queue, t.created_at FROM taskforge.tasks t
                      WHERE t.task_id = a.task_id ORDER BY t.task_id LIMIT 1) t
 WHERE a.finished_at >= date_trunc('minute', now(), 'UTC') - interval '59 minutes'
 GROUP BY date_trunc('minute', a.finished_at, 'UTC'), t.queue;
COMMENT ON VIEW taskforge.tf_throughput_per_minute IS
    'Per minute (UTC-truncated, last 60 minutes of database time) and queue: finished, succeeded and failed attempts, p50/p95 queue wait of first attempts (seconds).';

-- Every row that breaks a rule of the state machine (docs/state-machine.md). It must always be
-- empty; the test suite checks it after every test. Columns: rule, task_id, attempt_number
-- (NULL for task-level rules), detail.
CREATE VIEW taskforge.tf_invariant_violations AS
WITH per_task AS (
    SELECT a.task_id,
           count(*) AS attempts,
           max(a.attempt_number) AS max_number,
           count(*) FILTER (WHERE a.state = 'RUNNING') AS running
      FROM taskforge.attempts a
     GROUP BY a.task_id
), latest AS (
    -- Only the columns the rules read: the CTE is materialized once and scanned by each rule.
    SELECT t.task_id, t.state, t.owner_worker_id, t.lease_expires_at, t.deadline_at, t.attempt_count,
           t.max_attempts, t.finished_at, p.attempts, p.max_number, p.running,
           la.state AS latest_state, la.worker_id AS latest_worker
      FROM taskforge.tasks t
      LEFT JOIN per_task p ON p.task_id = t.task_id
      LEFT JOIN taskforge.attempts la ON la.task_id = t.task_id AND la.attempt_number = t.attempt_count
), blocked AS (
    -- BLOCKED tasks with their counts of parents not SUCCEEDED and FAILED or CANCELLED, in one
    -- pass (an EXISTS over the parents is costed as a hashed subplan over every task, which on a
    -- large table pushes the whole view into JIT compilation: seconds per read).
    SELECT t.task_id, t.parents_pending, t.attempt_count, u.unfinished, u.failed
      FROM taskforge.tasks t
     CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE p.state <> 'SUCCEEDED') AS unfinished,
                                count(*) FILTER (WHERE p.state IN ('FAILED', 'CANCELLED')) AS failed
                           FROM taskforge.task_dependencies d JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
                          WHERE d.child_task_id = t.task_id) u
     WHERE t.state = 'BLOCKED'
)
SELECT 'running task without owner or lease'::text AS rule, task_id, NULL::int AS attempt_number,
       format('owner=%s lease=%s', owner_worker_id, lease_expires_at) AS detail
  FROM latest WHERE state = 'RUNNING' AND (owner_worker_id IS NULL OR lease_expires_at IS NULL)
UNION ALL
SELECT 'owner or lease on a task that is not running', task_id, NULL, format('state=%s', state)
  FROM latest WHERE state <> 'RUNNING' AND (owner_worker_id IS NOT NULL OR lease_expires_at IS NOT NULL)
UNION ALL
SELECT 'attempt deadline on a task that is not running, or a lease past the deadline', task_id, NULL,
       format('state=%s deadline_at=%s lease_expires_at=%s', state, deadline_at, lease_expires_at)
  FROM latest WHERE (state <> 'RUNNING' AND deadline_at IS NOT NULL) OR lease_expires_at > deadline_at
UNION ALL
SELECT 'attempt numbers with gaps or not matching attempt_count', task_id, NULL,
       format('attempt_count=%s rows=%s max_number=%s', attempt_count, coalesce(attempts, 0), max_number)
  FROM latest WHERE coalesce(attempts, 0) <> attempt_count OR coalesce(max_number, 0) <> attempt_count
UNION ALL
SELECT 'more attempts than budget', task_id, NULL, format('attempts=%s max_attempts=%s', attempts, max_attempts)
  FROM latest WHERE coalesce(attempts, 0) > max_attempts
UNION ALL
SELECT 'more than one running attempt', task_id, NULL, format('running=%s', running)
  FROM latest WHERE running > 1
UNION ALL
SELECT 'task not running but has a running attempt', task_id, NULL, format('state=%s', state)
  FROM latest WHERE state <> 'RUNNING' AND running > 0
UNION ALL
SELECT 'running task whose current attempt is not running or not its owner''s', task_id, attempt_count,
       format('attempt state=%s attempt worker=%s owner=%s', latest_state, latest_worker, owner_worker_id)
  FROM latest WHERE state = 'RUNNING'
   AND (latest_state IS DISTINCT FROM 'RUNNING' OR latest_worker IS DISTINCT FROM owner_worker_id)
UNION ALL
SELECT 'queued or retrying task without attempts left', task_id, NULL,
       format('state=%s attempt_count=%s max_attempts=%s', state, attempt_count, max_attempts)
  FROM latest WHERE state IN ('QUEUED', 'RETRYING') AND attempt_count >= max_attempts
UNION ALL
SELECT 'succeeded task whose last attempt did not succeed', task_id, attempt_count,
       format('attempt state=%s', latest_state)
  FROM latest WHERE state = 'SUCCEEDED' AND latest_state IS DISTINCT FROM 'SUCCEEDED'
UNION ALL
SELECT 'retrying task whose last attempt did not fail', task_id, attempt_count,
       format('attempt state=%s', latest_state)
  FROM latest WHERE state = 'RETRYING' AND latest_state IS DISTINCT FROM 'FAILED'
UNION ALL
SELECT 'terminal task without finished_at, or finished_at on a live task', task_id, NULL,
       format('state=%s finished_at=%s', state, finished_at)
  FROM latest WHERE (state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')) <> (finished_at IS NOT NULL)
UNION ALL
SELECT 'attempt final state without finish time, or running with one', a.task_id, a.attempt_number,
       format('state=%s finished_at=%s', a.state, a.finished_at)
  FROM taskforge.attempts a WHERE (a.state = 'RUNNING') <> (a.finished_at IS NULL)
UNION ALL
SELECT 'abandoned attempt recovered before its lease expired', a.task_id, a.attempt_number,
       format('lease_expires_at=%s finished_at=%s', a.lease_expires_at, a.finished_at)
  FROM taskforge.attempts a WHERE a.state = 'ABANDONED' AND a.finished_at < a.lease_expires_at
UNION ALL
-- Dependencies (taskforge._tf_release_children).
SELECT 'blocked task whose parents_pending is not its count of parents not SUCCEEDED', task_id, NULL,
       format('parents_pending=%s unfinished parents=%s', parents_pending, unfinished)
  FROM blocked WHERE unfinished = 0 OR unfinished <> parents_pending
UNION ALL
SELECT 'blocked task with a FAILED or CANCELLED parent, or with attempts', task_id, NULL,
       format('attempt_count=%s', attempt_count)
  FROM blocked WHERE attempt_count > 0 OR failed > 0
UNION ALL
SELECT 'live task past its BLOCKED state with a parent not SUCCEEDED', d.child_task_id, NULL,
       format('state=%s parent=%s parent state=%s', c.state, d.parent_task_id, p.state)
  FROM taskforge.task_dependencies d
  JOIN taskforge.tasks c ON c.task_id = d.child_task_id
  JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
 WHERE c.state IN ('QUEUED', 'RUNNING', 'RETRYING') AND p.state <> 'SUCCEEDED'
UNION ALL
SELECT 'parent of a dependency edge not marked has_children', d.parent_task_id, NULL,
       format('child=%s', d.child_task_id)
  FROM taskforge.task_dependencies d JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
 WHERE NOT p.has_children
UNION ALL
-- Flow control (taskforge._tf_claim_keyed).
SELECT 'concurrency key with more RUNNING tasks than its max_running', NULL, NULL,
       format('concurrency_key=%s running=%s max_running=%s', k.concurrency_key, r.running, k.max_running)
  FROM taskforge.concurrency_keys k
 CROSS JOIN LATERAL (SELECT count(*) AS running FROM taskforge.tasks t
                      WHERE t.state = 'RUNNING' AND t.concurrency_key = k.concurrency_key) r
 WHERE r.running > k.max_running
UNION ALL
SELECT 'ordering key with more than one RUNNING task, or one running ahead of an earlier live task', t.task_id, NULL,
       format('ordering_key=%s earlier live task=%s (%s)', t.ordering_key, e.task_id, e.state)
  FROM taskforge.tasks t
  JOIN taskforge.tasks e ON e.ordering_key = t.ordering_key AND e.task_id < t.task_id
       AND e.finished_at IS NULL AND e.ordering_key IS NOT NULL
 WHERE t.state = 'RUNNING' AND t.ordering_key IS NOT NULL
UNION ALL
SELECT 'keyed flag not matching the task''s flow keys', t.task_id, NULL,
       format('keyed=%s rate_key=%s concurrency_key=%s ordering_key=%s', t.keyed, t.rate_key, t.concurrency_key,
              t.ordering_key)
  FROM taskforge.tasks t
 WHERE t.keyed <> (coalesce(t.rate_key, t.concurrency_key, t.ordering_key) IS NOT NULL)
UNION ALL
-- Idempotency keys (taskforge.idempotency_keys): a row for each keyed task, naming it, and no other.
SELECT 'idempotency key not paired with its task', coalesce(t.task_id, k.task_id), NULL,
       format('task key=%s; key row %s for task %s', t.idempotency_key, k.idempotency_key, k.task_id)
  FROM (SELECT x.task_id, x.idempotency_key FROM taskforge.tasks x WHERE x.idempotency_key IS NOT NULL) t
  FULL JOIN taskforge.idempotency_keys k ON k.idempotency_key = t.idempotency_key AND k.task_id = t.task_id
 WHERE t.task_id IS NULL OR k.task_id IS NULL;
COMMENT ON VIEW taskforge.tf_invariant_violations IS
    'Rows that break a state-machine rule (rule, task_id, attempt_number, detail). Must always be empty.';

-- Rows a maintenance sweep could not process and skips for now (docs/operations.md, "A row a
-- sweep cannot process"): one row per sweep and row, with the last error (SQLSTATE, message), how
-- often and since when it failed, and when the sweep tries the row again. Empty in a healthy
-- system; an entry disappears by itself once the sweep processes the row (or the row no longer
-- needs it). task_id names the task (tf_recover, tf_promote, tf_prune), schedule_name the periodic
-- schedule (tf_enqueue_periodic); the other is NULL.
CREATE VIEW taskforge.tf_maintenance_errors AS
SELECT e.sweep,
       CASE WHEN e.sweep <> 'tf_enqueue_periodic' THEN e.subject::bigint END AS task_id,
       CASE WHEN e.sweep = 'tf_enqueue_periodic' THEN e.subject END AS schedule_name,
       e.sqlstate, e.message, e.failures, e.first_seen_at, e.last_seen_at, e.retry_after
  FROM taskforge.maintenance_errors e;
COMMENT ON VIEW taskforge.tf_maintenance_errors IS
    'Rows a maintenance sweep failed on and skips until retry_after (sweep, task_id or schedule_name, sqlstate, message, failures, first_seen_at, last_seen_at, retry_after). Empty when every row was processed.';

-- Who holds back vacuum in this database: every session, prepared transaction, replication slot
-- and standby (hot_standby_feedback) whose transaction id or snapshot (xmin) keeps dead row
-- versions of taskforge.tasks and taskforge.attempts from being removed. While one is old, every
-- claim walks past the index entries of the tasks finished since it began (docs/operations.md,
-- "Long transactions"). xmin_age is in transactions (age()), held_seconds from the transaction's
-- start (database clock). pg_stat_activity is read with the caller's rights: without
-- pg_read_all_stats (or membership in the holder's role) a session of another role shows its pid,
-- role, application_name and xmin_age, while state, held_seconds and query are NULL. The reader's
-- own session is left out. Sort by xmin_age DESC: the first row is the oldest holder.
CREATE VIEW taskforge.tf_snapshot_holders AS
SELECT 'session'::text AS kind,
       a.pid,
       a.usename::text AS role_name,
       a.application_name AS name,
       a.state,
       greatest(age(a.backend_xid), age(a.backend_xmin)) AS xmin_age,
       extract(epoch FROM now() - a.xact_start)::double precision AS held_seconds,
       left(nullif(a.query, '<insufficient privilege>'), 200) AS query
  FROM pg_catalog.pg_stat_activity a
 WHERE (a.datname = current_database() OR a.datid IS NULL)
   AND (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL)
   AND a.pid <> pg_backend_pid()
UNION ALL
SELECT 'prepared_transaction', NULL, p.owner::text, p.gid, 'prepared', age(p.transaction),
       extract(epoch FROM now() - p.prepared)::double precision, NULL
  FROM pg_catalog.pg_prepared_xacts p
 WHERE p.database = current_database()
UNION ALL
SELECT 'replication_slot', r.active_pid, NULL, r.slot_name::text, CASE WHEN r.active THEN 'active' ELSE 'inactive' END,
       age(r.xmin), NULL, NULL
  FROM pg_catalog.pg_replication_slots r
 WHERE r.xmin IS NOT NULL;
COMMENT ON VIEW taskforge.tf_snapshot_holders IS
    'Sessions, prepared transactions and replication slots holding back vacuum in this database (kind, pid, role_name, name, state, xmin_age in transactions, held_seconds, query). ORDER BY xmin_age DESC for the oldest.';

-- Who may read what: clients and the console read every view; workers and schedulers none
-- (a worker sees payloads only through tf_claim).
REVOKE ALL ON taskforge.tf_tasks, taskforge.tf_attempts, taskforge.tf_workers, taskforge.tf_schedulers,
              taskforge.tf_queue_stats, taskforge.tf_queues, taskforge.tf_throughput,
              taskforge.tf_throughput_per_minute, taskforge.tf_task_types, taskforge.tf_periodic,
              taskforge.tf_invariant_violations, taskforge.tf_snapshot_holders, taskforge.tf_task_dependencies,
              taskforge.tf_rate_limits, taskforge.tf_concurrency_keys, taskforge.tf_maintenance_errors
    FROM PUBLIC;
GRANT SELECT ON taskforge.tf_tasks, taskforge.tf_attempts, taskforge.tf_workers, taskforge.tf_schedulers,
                taskforge.tf_queue_stats, taskforge.tf_queues, taskforge.tf_throughput,
                taskforge.tf_throughput_per_minute, taskforge.tf_task_types, taskforge.tf_periodic,
                taskforge.tf_invariant_violations, taskforge.tf_snapshot_holders, taskforge.tf_task_dependencies,
                taskforge.tf_rate_limits, taskforge.tf_concurrency_keys, taskforge.tf_maintenance_errors
    TO taskforge_client;
