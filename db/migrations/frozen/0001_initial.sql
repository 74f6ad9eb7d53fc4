-- Frozen by taskforge.dbsource (sha256 962a026336917fa5). Do not edit.
-- >>> db/schema/00_roles.sql
-- TaskForge roles (cluster-wide). Runs as the migrating user, before anything else.
--
-- taskforge_owner      NOLOGIN; owns every object in schema taskforge. SECURITY DEFINER
--                      functions run as this role, so no caller needs a table privilege.
-- taskforge_worker     register, heartbeat, claim, renew, finalize, deregister.
-- taskforge_scheduler  recover, promote, prune.
-- taskforge_client     submit, cancel, retry, read the views.
-- taskforge_console    everything taskforge_client has (the console reads views, submits, cancels).
--
-- The roles are NOLOGIN group roles: a DBA grants them to login roles, for example
--   CREATE ROLE app_worker LOGIN PASSWORD '...' IN ROLE taskforge_worker;
--
-- Creating roles needs CREATEROLE (or superuser). When the migrating user has neither and
-- the roles do not exist yet, this block stops the migration with SQLSTATE 42501 and says
-- what a DBA has to run first. Roles are shared by every database of the cluster: a second
-- TaskForge database reuses them.
DO $roles$
DECLARE
    r text;
    v_can_create boolean;
BEGIN
    SELECT rolsuper OR rolcreaterole INTO v_can_create
      FROM pg_catalog.pg_roles WHERE rolname = current_user;
    FOREACH r IN ARRAY ARRAY['taskforge_owner', 'taskforge_worker', 'taskforge_scheduler',
                             'taskforge_client', 'taskforge_console']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            IF NOT v_can_create THEN
                RAISE EXCEPTION USING
                    ERRCODE = '42501',
                    MESSAGE = format('role %I does not exist and %I may not create roles', r, current_user),
                    HINT = 'Ask a DBA to run: CREATE ROLE taskforge_owner NOLOGIN; CREATE ROLE taskforge_worker NOLOGIN; '
                        || 'CREATE ROLE taskforge_scheduler NOLOGIN; CREATE ROLE taskforge_client NOLOGIN; '
                        || 'CREATE ROLE taskforge_console NOLOGIN IN ROLE taskforge_client; '
                        || format('GRANT taskforge_owner TO %I;', current_user)
                        || ' then run the migration again (see docs/operations.md).';
            END IF;
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created concurrently by another migration of the same cluster
            END;
        END IF;
    END LOOP;

    -- The console may do all a client may do.
    IF NOT pg_catalog.pg_has_role('taskforge_console', 'taskforge_client', 'MEMBER') THEN
        GRANT taskforge_client TO taskforge_console;
    END IF;

    -- The migrating user must be able to SET ROLE taskforge_owner to create objects as it.
    IF NOT pg_catalog.pg_has_role(current_user, 'taskforge_owner', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT taskforge_owner TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION USING
                ERRCODE = '42501',
                MESSAGE = format('%I is not a member of taskforge_owner', current_user),
                HINT = format('Ask a DBA to run: GRANT taskforge_owner TO %I;', current_user);
        END;
    END IF;
END
$roles$;

-- >>> db/schema/10_schema.sql
-- Schema taskforge, owned by the NOLOGIN owner role. Everything after this file is created
-- while the session acts as taskforge_owner (99_finish.sql resets the role).
CREATE SCHEMA taskforge AUTHORIZATION taskforge_owner;
COMMENT ON SCHEMA taskforge IS
    'TaskForge: PostgreSQL-backed background tasks. Call the tf_* functions; read the tf_* views.';
REVOKE ALL ON SCHEMA taskforge FROM PUBLIC;
GRANT USAGE ON SCHEMA taskforge
    TO taskforge_worker, taskforge_scheduler, taskforge_client, taskforge_console;
SET ROLE taskforge_owner;

-- >>> db/schema/15_domains.sql
-- Domains: the rules of single columns, checked where a value is written into such a column
-- (INSERT, or an UPDATE that sets it), never re-read for columns an UPDATE leaves alone.
--
-- Why domains and not table CHECKs: PostgreSQL prepares every CHECK constraint of a table for
-- each INSERT or UPDATE statement, parsing its stored expression again (ExecConstraints,
-- stringToNode), whatever columns the statement changes; a worker's every claim and finalize
-- is such a statement. A domain's constraints are prepared once per session and kept in the
-- type cache. The rules that tie several columns together stay table CHECKs (20_tables.sql).
-- Measured: the single-column CHECKs of tasks and attempts cost 17 % of a worker turn's
-- instructions (docs/benchmarks.md, "The hot path in SQL"). A domain violation is SQLSTATE
-- 23514 (check_violation), like a table CHECK, and names the domain's constraint.
--
-- Clients see the base types: PostgreSQL sends the base type of a domain column to clients,
-- and functions return base types (RETURNS TABLE columns are declared text, int, jsonb).

-- The task state machine of docs/state-machine.md.
CREATE DOMAIN taskforge.task_state AS text
    CONSTRAINT task_state_known
        CHECK (VALUE IN ('BLOCKED', 'QUEUED', 'RUNNING', 'RETRYING', 'SUCCEEDED', 'FAILED', 'CANCELLED'));
COMMENT ON DOMAIN taskforge.task_state IS
    'A task state: BLOCKED | QUEUED | RUNNING | RETRYING | SUCCEEDED | FAILED | CANCELLED (docs/state-machine.md).';

-- The states of one attempt, and what ended it.
CREATE DOMAIN taskforge.attempt_state AS text
    CONSTRAINT attempt_state_known
        CHECK (VALUE IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'ABANDONED', 'CANCELLED'));
COMMENT ON DOMAIN taskforge.attempt_state IS
    'An attempt state: RUNNING | SUCCEEDED | FAILED | ABANDONED | CANCELLED.';
-- What the worker reported (succeeded | failed | retryable | cancelled), or what recovery found:
-- lease_expired, or timed_out (the lease ran to the attempt's deadline).
CREATE DOMAIN taskforge.attempt_outcome AS text
    CONSTRAINT attempt_outcome_known
        CHECK (VALUE IN ('succeeded', 'failed', 'retryable', 'cancelled', 'lease_expired', 'timed_out'));
COMMENT ON DOMAIN taskforge.attempt_outcome IS
    'How an attempt ended: succeeded | failed | retryable | cancelled (reported) | lease_expired | timed_out (recovery).';
CREATE DOMAIN taskforge.attempt_number AS int
    CONSTRAINT attempt_number_positive CHECK (VALUE >= 1);
COMMENT ON DOMAIN taskforge.attempt_number IS 'An attempt number: 1 for the first attempt of a task, then 2, 3, ...';

-- Submitted request fields (tasks and periodic schedules).
CREATE DOMAIN taskforge.json_object AS jsonb
    CONSTRAINT json_object_is_object CHECK (jsonb_typeof(VALUE) = 'object');
COMMENT ON DOMAIN taskforge.json_object IS 'A JSON object (payloads are objects, never arrays or scalars).';
CREATE DOMAIN taskforge.task_priority AS int
    CONSTRAINT task_priority_range CHECK (VALUE BETWEEN -32768 AND 32767);
COMMENT ON DOMAIN taskforge.task_priority IS 'A priority, -32768..32767 (higher runs first).';
CREATE DOMAIN taskforge.attempt_budget AS int
    CONSTRAINT attempt_budget_range CHECK (VALUE BETWEEN 1 AND 10000);
COMMENT ON DOMAIN taskforge.attempt_budget IS 'A task''s max_attempts: 1..10000 attempts in all (first, retries, crash replacements).';
CREATE DOMAIN taskforge.idempotency_key AS text
    CONSTRAINT idempotency_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);
COMMENT ON DOMAIN taskforge.idempotency_key IS 'An idempotency key, 1..200 characters.';
-- A flow-control key of a task (rate_key, concurrency_key, ordering_key): any text of 1..200
-- characters, so that a tenant or entity id can be used as it is.
CREATE DOMAIN taskforge.flow_key AS text
    CONSTRAINT flow_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);
COMMENT ON DOMAIN taskforge.flow_key IS 'A rate, concurrency or ordering key, 1..200 characters.';
-- The name format is added in 50_name_rules.sql, from its one home (taskforge._tf_name_pattern).
CREATE DOMAIN taskforge.queue_name AS text;
COMMENT ON DOMAIN taskforge.queue_name IS 'A queue name (format: taskforge._tf_name_pattern(''queue'')).';
-- The format is added in 50_name_rules.sql, from its one home (taskforge._tf_traceparent_ok).
CREATE DOMAIN taskforge.traceparent AS text;
COMMENT ON DOMAIN taskforge.traceparent IS
    'A W3C trace context traceparent header value (format: taskforge._tf_traceparent_ok).';

-- Private: the verdict on one finalize element of a batch (taskforge._tf_turn): the element, why
-- it is refused (NULL: accepted), the task state before and after, and what the attempt row
-- receives. Held in an array sorted by task_id between the two statements of a turn.
CREATE TYPE taskforge._tf_verdict AS (
    task_id        bigint,
    attempt_number int,
    reason         text,
    old_state      text,
    new_state      text,
    outcome        text,
    result         jsonb,
    error          jsonb
);
COMMENT ON TYPE taskforge._tf_verdict IS
    'Private: the verdict on one finalize element of a batch (taskforge._tf_turn).';

-- >>> db/schema/20_tables.sql
-- TaskForge tables. Nobody but taskforge_owner has a privilege on them: callers go through
-- the SECURITY DEFINER tf_* functions and read the tf_* views.
--
-- Time: every column is timestamptz and every value is written from the database clock
-- (clock_timestamp(), read once per function call). Clients never send their own clock.

-- Allowed task types and their retry policy (docs/design.md §4). tf_submit rejects unknown types.
CREATE TABLE taskforge.task_types (
    -- Name format: CHECK task_types_name_format in 50_name_rules.sql.
    task_type            text PRIMARY KEY,
    backoff_base_seconds double precision NOT NULL DEFAULT 2
        CONSTRAINT task_types_base_range CHECK (backoff_base_seconds BETWEEN 0 AND 86400),
    backoff_cap_seconds  double precision NOT NULL DEFAULT 300
        CONSTRAINT task_types_cap_range CHECK (backoff_cap_seconds BETWEEN 0 AND 86400),
    backoff_jitter       double precision NOT NULL DEFAULT 0.2
        CONSTRAINT task_types_jitter_range CHECK (backoff_jitter BETWEEN 0 AND 1),
    -- Attempt deadline in seconds from the claim (NULL = none); copied to each task at submit.
    timeout_seconds      double precision
        CONSTRAINT task_types_timeout_range CHECK (timeout_seconds > 0 AND timeout_seconds <= 604800),
    description          text,
    created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE taskforge.task_types IS
    'Allowed task types with their retry backoff policy (seconds). Written by tf_register_task_type.';

-- One row per worker process start (tf_register_worker). Rows are kept after deregistration so
-- attempt history can name its worker; tf_prune_workers deletes those of stopped or stale
-- processes once no attempt names them.
CREATE TABLE taskforge.workers (
    worker_id          uuid PRIMARY KEY,
    name               text NOT NULL CONSTRAINT workers_name_length CHECK (length(name) BETWEEN 1 AND 200),
    hostname           text,
    pid                int,
    queues             text[],
    task_types         text[],
    heartbeat_seconds  double precision NOT NULL DEFAULT 5
        CONSTRAINT workers_heartbeat_range CHECK (heartbeat_seconds > 0 AND heartbeat_seconds <= 3600),
    started_at         timestamptz NOT NULL,
    last_heartbeat_at  timestamptz NOT NULL,
    stopped_at         timestamptz,
    CONSTRAINT workers_heartbeat_after_start CHECK (last_heartbeat_at >= started_at)
);
COMMENT ON TABLE taskforge.workers IS
    'Worker processes: one row per process start, liveness from database-time heartbeats.';

-- One row per scheduler process start, written only by tf_scheduler_heartbeat (an upsert on the
-- id the process picks at start). Liveness for probes: tf_schedulers, `taskforge healthcheck`.
-- tf_prune_workers deletes the rows of stopped or stale schedulers.
CREATE TABLE taskforge.schedulers (
    scheduler_id       uuid PRIMARY KEY,
    name               text NOT NULL CONSTRAINT schedulers_name_length CHECK (length(name) BETWEEN 1 AND 200),
    hostname           text CONSTRAINT schedulers_hostname_length CHECK (length(hostname) <= 255),
    pid                int CONSTRAINT schedulers_pid_positive CHECK (pid > 0),
    heartbeat_seconds  double precision NOT NULL
        CONSTRAINT schedulers_heartbeat_range CHECK (heartbeat_seconds > 0 AND heartbeat_seconds <= 3600),
    started_at         timestamptz NOT NULL,
    last_heartbeat_at  timestamptz NOT NULL,
    stopped_at         timestamptz,
    CONSTRAINT schedulers_heartbeat_after_start CHECK (last_heartbeat_at >= started_at),
    CONSTRAINT schedulers_stop_after_start CHECK (stopped_at >= started_at)
);
COMMENT ON TABLE taskforge.schedulers IS
    'Scheduler processes: one row per process start, liveness from database-time heartbeats (tf_scheduler_heartbeat).';

-- Per-queue controls (tf_pause_queue, tf_resume_queue, tf_set_queue_limit). A queue needs no row
-- here to exist: tasks name their queue freely; a row only records a pause or a limit.
CREATE TABLE taskforge.queues (
    queue        taskforge.queue_name PRIMARY KEY,
    -- Set while the queue is paused: tf_claim takes nothing from it; submits still succeed.
    paused_at    timestamptz,
    -- At most this many of the queue's tasks RUNNING at once (NULL = unlimited).
    max_running  int CONSTRAINT queues_max_running_range CHECK (max_running BETWEEN 1 AND 1000000),
    -- Priority aging (tf_set_queue_aging): a waiting task's effective priority rises by this many
    -- priority points per second since it was submitted (NULL = off: claim order is priority).
    aging_per_second double precision
        CONSTRAINT queues_aging_range CHECK (aging_per_second > 0 AND aging_per_second <= 65535),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE taskforge.queues IS
    'Per-queue controls: pause (paused_at), concurrency limit (max_running, NULL = unlimited), priority aging (aging_per_second, NULL = off).';
-- tf_claim reads the few restricted queues on every call.
CREATE INDEX queues_restricted_idx ON taskforge.queues (queue)
    WHERE paused_at IS NOT NULL OR max_running IS NOT NULL OR aging_per_second IS NOT NULL;

-- The logical unit of work. task_id never changes across retries and recovery.
CREATE TABLE taskforge.tasks (
    task_id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_type          text NOT NULL REFERENCES taskforge.task_types (task_type),
    -- Single-column rules are domains (15_domains.sql); the rules across columns are below.
    payload            taskforge.json_object NOT NULL,
    queue              taskforge.queue_name NOT NULL,
    priority           taskforge.task_priority NOT NULL,
    max_attempts       taskforge.attempt_budget NOT NULL,
    state              taskforge.task_state NOT NULL DEFAULT 'QUEUED',
    -- Number of attempts created so far, which is also the number of the latest attempt.
    attempt_count      int NOT NULL DEFAULT 0,
    -- Earliest eligibility (QUEUED) or end of backoff (RETRYING); not a promise of start time.
    scheduled_at       timestamptz NOT NULL,
    idempotency_key    taskforge.idempotency_key,
    -- SHA-256 of the canonical request (taskforge._tf_fingerprint); kept only with a key.
    fingerprint        bytea,
    owner_worker_id    uuid REFERENCES taskforge.workers (worker_id),
    lease_expires_at   timestamptz,
    cancel_requested_at timestamptz,
    cancel_reason      text,
    -- The task type's timeout_seconds when the task was submitted (NULL = no deadline), and the
    -- deadline of the current attempt (claim time + timeout_seconds; set only while RUNNING).
    -- No lease is granted past deadline_at, so an attempt cannot hold the task longer.
    timeout_seconds    double precision,
    deadline_at        timestamptz,
    -- tf_submit's notify_finished: the terminal transition sends
    -- pg_notify('taskforge_finished', task_id) (the trigger tasks_notify_finished, 55_triggers.sql).
    notify_finished    boolean NOT NULL DEFAULT false,
    -- tf_submit's traceparent: the W3C trace context of the submitter (NULL = none), returned
    -- with every claim of the task. Format: the domain (15_domains.sql, 50_name_rules.sql).
    traceparent        taskforge.traceparent,
    -- Dependencies (tf_submit's depends_on, docs/workflows.md): while BLOCKED, the number of
    -- parents not yet SUCCEEDED (0 otherwise); and whether any task depends on this one (the row
    -- trigger tasks_release_children, 55_triggers.sql, looks at no other row).
    parents_pending    int NOT NULL DEFAULT 0,
    has_children       boolean NOT NULL DEFAULT false,
    -- Flow control (tf_submit's rate_key, concurrency_key, ordering_key; docs/flow-control.md),
    -- and keyed: true when any of the three is set. Keyed tasks are not in the plain claim
    -- indexes: the claim's keyed pick (taskforge._tf_claim_keyed) chooses them under their rules.
    rate_key           taskforge.flow_key,
    concurrency_key    taskforge.flow_key,
    ordering_key       taskforge.flow_key,
    keyed              boolean NOT NULL DEFAULT false,
    result             jsonb,
    last_error         jsonb,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    finished_at        timestamptz
    -- The rules across columns: CHECK tasks_row_rules (52_row_rules.sql).
);
COMMENT ON TABLE taskforge.tasks IS
    'Logical tasks. State machine in docs/state-machine.md; change only through tf_* functions.';

-- Idempotency keys: one row per task submitted with a key, reserved for as long as the task row
-- exists (no TTL, no tenant scope). A table of its own rather than a unique index of tasks, so
-- that a key stays unique in the whole database when tasks is partitioned (a unique index of a
-- partitioned table must contain the partition key: tf_partition_history, docs/operations.md).
-- taskforge._tf_submit_one inserts the key first (ON CONFLICT: replay or TF409), then the task
-- with the task_id drawn for it, in one transaction; tf_prune deletes both. tasks.idempotency_key
-- keeps a copy for reading. No foreign key: the key row is written before its task, and a
-- partition of tasks is dropped whole; tf_invariant_violations checks the pairing.
CREATE TABLE taskforge.idempotency_keys (
    idempotency_key    taskforge.idempotency_key PRIMARY KEY,
    task_id            bigint NOT NULL
);
COMMENT ON TABLE taskforge.idempotency_keys IS
    'Idempotency keys of tasks (unique in the database); written and deleted only with their task.';

-- The partitioned history (opt-in: tf_partition_history; docs/operations.md, "Partitioned
-- history"). history_layout has one row once tasks and attempts are partitioned by ranges of
-- task_id, none on the default layout (the functions that differ test for it). Each range is a
-- pair of partitions, taskforge.tasks_p<N> and taskforge.attempts_p<N>, listed in
-- history_partitions; the attempts partition refers to its twin tasks partition (an attempt's
-- task has the same task_id, so it lies in the twin: the foreign key is exact).
CREATE TABLE taskforge.history_layout (
    singleton            boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    tasks_per_partition  bigint NOT NULL CHECK (tasks_per_partition BETWEEN 1000 AND 1000000000),
    partitions_ahead     int NOT NULL CHECK (partitions_ahead BETWEEN 1 AND 100),
    -- The storage parameters of the tables before partitioning (autovacuum settings, below),
    -- given to every new partition: a partitioned table holds none of its own.
    tasks_options        text[],
    attempts_options     text[],
    partitioned_at       timestamptz NOT NULL
);
COMMENT ON TABLE taskforge.history_layout IS
    'One row when tasks and attempts are partitioned by task_id ranges (tf_partition_history); none otherwise.';
CREATE TABLE taskforge.history_partitions (
    partition_no   bigint PRIMARY KEY CHECK (partition_no >= 0),
    -- task_id range [first_task_id, end_task_id); first_task_id NULL: from the lowest id (the
    -- tables that held the history before partitioning, attached whole as the first partition).
    first_task_id  bigint,
    end_task_id    bigint NOT NULL,
    created_at     timestamptz NOT NULL,
    CHECK (first_task_id < end_task_id)
);
COMMENT ON TABLE taskforge.history_partitions IS
    'The task_id ranges of the partitioned history: tasks_p<partition_no> and attempts_p<partition_no>.';

-- The edges of task dependencies (tf_submit's depends_on): the child waits BLOCKED until every
-- parent SUCCEEDED. Rows are written only at the child's submit, and deleted by tf_prune with
-- the tasks they name. No foreign keys on purpose: a foreign key to tasks would add a trigger
-- call to every UPDATE of tasks, the hot path of every task, dependent or not.
CREATE TABLE taskforge.task_dependencies (
    child_task_id  bigint NOT NULL,
    parent_task_id bigint NOT NULL,
    PRIMARY KEY (child_task_id, parent_task_id),
    CONSTRAINT task_dependencies_not_self CHECK (child_task_id <> parent_task_id)
);
COMMENT ON TABLE taskforge.task_dependencies IS
    'Dependency edges: child_task_id runs only after parent_task_id SUCCEEDED. Written by tf_submit/tf_submit_many (depends_on).';

-- Rate limits per rate key (tf_set_rate_limit): a token bucket of burst tokens refilled at
-- per_second. A claim takes one token per task it starts, under this row's lock. A rate key
-- with no row here is not limited.
CREATE TABLE taskforge.rate_limits (
    rate_key     taskforge.flow_key PRIMARY KEY,
    per_second   double precision NOT NULL
        CONSTRAINT rate_limits_per_second_range CHECK (per_second > 0 AND per_second <= 1000000),
    burst        int NOT NULL CONSTRAINT rate_limits_burst_range CHECK (burst BETWEEN 1 AND 1000000),
    -- The bucket as of refilled_at (database clock, never moved backwards).
    tokens       double precision NOT NULL,
    refilled_at  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT rate_limits_tokens_range CHECK (tokens >= 0 AND tokens <= burst)
);
COMMENT ON TABLE taskforge.rate_limits IS
    'Token buckets per rate key (per_second, burst; tokens as of refilled_at). Written by tf_set_rate_limit and by claims.';

-- Concurrency keys: one row per key ever submitted (tf_submit adds it), with its limit
-- (tf_set_concurrency_limit; NULL = unlimited) and when a claim last started one of its tasks
-- (the rotation of fair claiming: the key served longest ago goes first).
CREATE TABLE taskforge.concurrency_keys (
    concurrency_key  taskforge.flow_key PRIMARY KEY,
    max_running      int CONSTRAINT concurrency_keys_max_running_range CHECK (max_running BETWEEN 1 AND 1000000),
    last_claimed_at  timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
COMMENT ON TABLE taskforge.concurrency_keys IS
    'Concurrency keys: limit of RUNNING tasks per key (NULL = unlimited) and the rotation stamp of fair claiming.';

-- Ordering keys: one row per key ever submitted. tf_submit locks it, so that the submits of one
-- key commit in task id order (the order the key's tasks then run in).
CREATE TABLE taskforge.ordering_keys (
    ordering_key  taskforge.flow_key PRIMARY KEY,
    created_at    timestamptz NOT NULL
);
COMMENT ON TABLE taskforge.ordering_keys IS
    'Ordering keys: locked by each submit of the key so that its tasks commit, and run, in task id order.';

-- One execution of a task, numbered 1..N per task. History is never rewritten: a row is
-- inserted RUNNING by tf_claim and gets exactly one final state.
CREATE TABLE taskforge.attempts (
    task_id            bigint NOT NULL REFERENCES taskforge.tasks (task_id) ON DELETE CASCADE,
    -- Single-column rules are domains (15_domains.sql); the rules across columns are below.
    attempt_number     taskforge.attempt_number NOT NULL,
    worker_id          uuid NOT NULL REFERENCES taskforge.workers (worker_id),
    state              taskforge.attempt_state NOT NULL,
    -- What the worker reported, or what recovery found (taskforge.attempt_outcome).
    outcome            taskforge.attempt_outcome,
    started_at         timestamptz NOT NULL,
    -- Last lease deadline granted to this attempt (kept in step with tf_renew), so the recovery
    -- lag of an ABANDONED attempt is finished_at - lease_expires_at.
    lease_expires_at   timestamptz NOT NULL,
    -- The attempt's deadline (started_at + the task's timeout_seconds), NULL when none.
    deadline_at        timestamptz,
    finished_at        timestamptz,
    result             jsonb,
    error              jsonb,
    PRIMARY KEY (task_id, attempt_number)
    -- The rules across columns: CHECK attempts_row_rules (52_row_rules.sql).
);
COMMENT ON TABLE taskforge.attempts IS
    'Attempt history: one durable, numbered row per execution of a task.';

-- Periodic schedules (tf_schedule_periodic): a cron expression read in a time zone, and the
-- request tf_enqueue_periodic submits at each tick. next_fire_at is the next tick not yet enqueued.
CREATE TABLE taskforge.periodic_schedules (
    -- Name formats: CHECK and domain in 50_name_rules.sql (taskforge._tf_name_pattern).
    name          text PRIMARY KEY,
    cron          text NOT NULL
        CONSTRAINT periodic_schedules_cron_length CHECK (length(cron) BETWEEN 1 AND 200),
    task_type     text NOT NULL REFERENCES taskforge.task_types (task_type),
    payload       taskforge.json_object NOT NULL,
    queue         taskforge.queue_name NOT NULL,
    priority      taskforge.task_priority NOT NULL,
    max_attempts  int NOT NULL
        CONSTRAINT periodic_schedules_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    -- A name from pg_timezone_names (checked by tf_schedule_periodic; a CHECK cannot query it).
    timezone      text NOT NULL,
    next_fire_at  timestamptz NOT NULL,
    last_fire_at  timestamptz,
    -- The task of the last tick (no foreign key: tf_prune may delete it).
    last_task_id  bigint,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    CONSTRAINT periodic_schedules_fired_before_next CHECK (last_fire_at IS NULL OR last_fire_at < next_fire_at),
    CONSTRAINT periodic_schedules_task_iff_fired CHECK ((last_fire_at IS NULL) = (last_task_id IS NULL))
);
COMMENT ON TABLE taskforge.periodic_schedules IS
    'Periodic schedules: cron + time zone + the request enqueued at each tick. Written by tf_schedule_periodic, tf_enqueue_periodic.';

-- Rows a maintenance sweep could not process (tf_recover, tf_promote, tf_enqueue_periodic,
-- tf_prune): one row per sweep and row it failed on, written by taskforge._tf_maintenance_failed
-- when a sweep's set-based statement fails and its row-by-row fallback isolates the row (each row
-- in a subtransaction of its own). The sweep leaves the row out until retry_after (a backoff that
-- doubles from 60 s to 1 h per failure), then tries it again; the entry is deleted by the sweep as
-- soon as the row is no longer one it would process (processed at last, repaired, deleted).
-- Read through the view tf_maintenance_errors. docs/operations.md, "A row a sweep cannot process".
CREATE TABLE taskforge.maintenance_errors (
    sweep          text NOT NULL CONSTRAINT maintenance_errors_sweep_known
        CHECK (sweep IN ('tf_recover', 'tf_promote', 'tf_enqueue_periodic', 'tf_prune')),
    -- The row: a task id (decimal) for tf_recover, tf_promote and tf_prune, a schedule name for
    -- tf_enqueue_periodic. No foreign key: the row may be deleted while its entry is kept.
    subject        text NOT NULL,
    -- The error of the last failure: SQLSTATE and message (capped at 1000 characters; no DETAIL,
    -- which can quote the row's values).
    sqlstate       text NOT NULL CONSTRAINT maintenance_errors_sqlstate_format CHECK (sqlstate ~ '^[0-9A-Z]{5}$'),
    message        text NOT NULL CONSTRAINT maintenance_errors_message_length CHECK (length(message) <= 1000),
    failures       int NOT NULL CONSTRAINT maintenance_errors_failures_positive CHECK (failures >= 1),
    first_seen_at  timestamptz NOT NULL,
    last_seen_at   timestamptz NOT NULL,
    -- Until then the sweep leaves the row out (and does not let it shorten its next deadline).
    retry_after    timestamptz NOT NULL,
    PRIMARY KEY (sweep, subject),
    CONSTRAINT maintenance_errors_task_subject CHECK (sweep = 'tf_enqueue_periodic' OR subject ~ '^[0-9]{1,19}$'),
    CONSTRAINT maintenance_errors_seen_order CHECK (last_seen_at >= first_seen_at AND retry_after > last_seen_at)
);
COMMENT ON TABLE taskforge.maintenance_errors IS
    'Rows a maintenance sweep (tf_recover, tf_promote, tf_enqueue_periodic, tf_prune) failed on and skips until retry_after. Written by _tf_maintenance_failed; read through tf_maintenance_errors.';

-- Indexes. Every hot-path statement has a partial index that holds only the rows it can want,
-- so the cost of claim/promote/recover does not grow with finished history.

-- tf_claim: due QUEUED tasks in claim order (priority DESC, created_at, task_id) across all queues.
-- Keyed tasks (flow control) are not in it, nor in the next: the keyed pick has its own.
CREATE INDEX tasks_claim_order_idx ON taskforge.tasks (priority DESC, created_at, task_id)
    WHERE state = 'QUEUED' AND NOT keyed;
-- tf_claim with a queue filter: the same order within one queue.
CREATE INDEX tasks_claim_queue_idx ON taskforge.tasks (queue, priority DESC, created_at, task_id)
    WHERE state = 'QUEUED' AND NOT keyed;
-- The keyed pick (taskforge._tf_claim_keyed): whether any keyed task is QUEUED (one probe per
-- claim, on an index that is empty where flow control is not used) ...
CREATE INDEX tasks_keyed_due_idx ON taskforge.tasks (scheduled_at)
    WHERE state = 'QUEUED' AND keyed;
-- ... the QUEUED tasks of each concurrency key in claim order, and the RUNNING ones (its count) ...
CREATE INDEX tasks_concurrency_key_idx ON taskforge.tasks (concurrency_key, priority DESC, created_at, task_id)
    WHERE state = 'QUEUED' AND concurrency_key IS NOT NULL;
CREATE INDEX tasks_concurrency_running_idx ON taskforge.tasks (concurrency_key)
    WHERE state = 'RUNNING' AND concurrency_key IS NOT NULL;
-- ... the unfinished tasks of each ordering key in task id order (the first is its head) ...
CREATE INDEX tasks_ordering_key_idx ON taskforge.tasks (ordering_key, task_id)
    WHERE ordering_key IS NOT NULL AND finished_at IS NULL;
-- ... and the finished ones by finish time: a claim skips a key's head while an earlier task of
-- the key finished after the claim's clock read (taskforge._tf_claim_keyed, "Exactness"); an
-- equality on the key and a range on the time, whatever the planner's statistics say (without
-- it a table never analyzed had that check walk the primary key below each head).
CREATE INDEX tasks_ordering_finished_idx ON taskforge.tasks (ordering_key, finished_at)
    WHERE ordering_key IS NOT NULL AND finished_at IS NOT NULL;
-- ... and the QUEUED tasks of each rate key that carry no other key, in claim order.
CREATE INDEX tasks_rate_key_idx ON taskforge.tasks (rate_key, priority DESC, created_at, task_id)
    WHERE state = 'QUEUED' AND rate_key IS NOT NULL AND concurrency_key IS NULL AND ordering_key IS NULL;
-- The dependency edges from the parent's side (releasing or cancelling its children).
CREATE INDEX task_dependencies_parent_idx ON taskforge.task_dependencies (parent_task_id);
-- tf_claim when many QUEUED tasks are not due yet (a delayed backlog): the planner reads the
-- few due rows here and sorts them, instead of walking the claim order past future tasks.
-- Plain tasks only, like the claim-order indexes: the keyed probe of the claim must not be able
-- to read this index (a generic plan cached on empty tables did, stepping over every QUEUED
-- plain task on each claim: docs/benchmarks.md, "Flow control and dependencies").
CREATE INDEX tasks_queued_due_idx ON taskforge.tasks (scheduled_at)
    WHERE state = 'QUEUED' AND NOT keyed;
-- tf_promote: RETRYING tasks by end of backoff; also gives next_due_at from its first entry.
CREATE INDEX tasks_retry_due_idx ON taskforge.tasks (scheduled_at)
    WHERE state = 'RETRYING';
-- tf_recover: RUNNING tasks by lease deadline; also gives next_lease_expiry from its first entry.
CREATE INDEX tasks_lease_expiry_idx ON taskforge.tasks (lease_expires_at)
    WHERE state = 'RUNNING';
-- tf_prune: terminal tasks oldest first.
CREATE INDEX tasks_finished_idx ON taskforge.tasks (finished_at)
    WHERE finished_at IS NOT NULL;
-- tf_enqueue_periodic: due schedules by next tick; also gives the next tick from its first entry.
CREATE INDEX periodic_schedules_due_idx ON taskforge.periodic_schedules (next_fire_at);
-- The foreign key from periodic schedules to task types (tf_register_task_type never deletes, but a DBA may).
CREATE INDEX periodic_schedules_task_type_idx ON taskforge.periodic_schedules (task_type);
-- The foreign key from tasks to workers and the attempts by worker (views, worker deletion checks).
CREATE INDEX tasks_owner_idx ON taskforge.tasks (owner_worker_id) WHERE owner_worker_id IS NOT NULL;
CREATE INDEX attempts_worker_idx ON taskforge.attempts (worker_id);
-- Recent throughput views scan attempts by finish time.
CREATE INDEX attempts_finished_idx ON taskforge.attempts (finished_at) WHERE finished_at IS NOT NULL;

-- Autovacuum of the hot tables (docs/operations.md, "Long transactions and vacuum"). Every claim,
-- renewal and finalize writes a new version of a tasks row (and of the queues row of a limited
-- queue); every heartbeat one of a workers or schedulers row; every attempt inserts and then
-- updates an attempts row. The server's defaults wait for 20% of a table to be dead, which on a
-- busy queue lets the claim indexes fill with dead entries that every claim walks past. These
-- settings vacuum after a fixed, small amount of churn and let the vacuum run without the cost
-- pauses (autovacuum must be on: they change nothing where it is off, as on the test server).
ALTER TABLE taskforge.tasks SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);
ALTER TABLE taskforge.attempts SET (
    autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0
);
-- Small tables updated in place all the time: vacuum after a few hundred dead rows, whatever
-- their size.
ALTER TABLE taskforge.workers SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);
ALTER TABLE taskforge.schedulers SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);
ALTER TABLE taskforge.queues SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);
ALTER TABLE taskforge.rate_limits SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);
ALTER TABLE taskforge.concurrency_keys SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);

-- >>> db/functions/_tf_add_partition.sql
-- taskforge._tf_add_partition(first_task_id bigint) -> void             (private helper)
--
-- Purpose:    make one range of the partitioned history (docs/operations.md, "Partitioned
--             history"): taskforge.tasks_p<N> for task ids [first_task_id, first_task_id +
--             tasks_per_partition), N = first_task_id / tasks_per_partition (the layout's, in
--             taskforge.history_layout), its twin taskforge.attempts_p<N> with the foreign key
--             (task_id) to it (ON DELETE CASCADE, the default layout's attempts -> tasks key,
--             range by range), both with the storage parameters recorded in history_layout, and
--             its row in taskforge.history_partitions. Indexes, checks, the other foreign keys
--             and the row triggers come from the partitioned parents. (The first range, the
--             tables from before the conversion, is attached by tf_partition_history instead.)
-- Parameters: first_task_id  a multiple of tasks_per_partition: the range's first id.
-- Returns:    nothing.
-- Errors:     42P07 when the partition exists; 42P17 (invalid object definition) when the range
--             overlaps one that exists; 55P03 when a lock is not granted within the caller's
--             lock_timeout.
-- Locks:      ACCESS EXCLUSIVE on taskforge.tasks and taskforge.attempts (creating a partition
--             of a partitioned table takes it on PostgreSQL 15), SHARE ROW EXCLUSIVE on
--             task_types and workers (the foreign keys), until the caller commits.
-- Clock:      clock_timestamp() for created_at.
-- By hand:    no; tf_make_partitions and tf_partition_history call it.
CREATE OR REPLACE FUNCTION taskforge._tf_add_partition(first_task_id bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_layout taskforge.history_layout%ROWTYPE;
    v_no bigint;
    v_end bigint;
BEGIN
    SELECT * INTO STRICT v_layout FROM taskforge.history_layout;
    v_no := _tf_add_partition.first_task_id / v_layout.tasks_per_partition;
    v_end := _tf_add_partition.first_task_id + v_layout.tasks_per_partition;
    EXECUTE format('CREATE TABLE taskforge.%I PARTITION OF taskforge.tasks FOR VALUES FROM (%s) TO (%s)%s',
                   'tasks_p' || v_no, _tf_add_partition.first_task_id, v_end,
                   CASE WHEN v_layout.tasks_options IS NOT NULL
                        THEN format(' WITH (%s)', array_to_string(v_layout.tasks_options, ', ')) ELSE '' END);
    EXECUTE format('CREATE TABLE taskforge.%I PARTITION OF taskforge.attempts FOR VALUES FROM (%s) TO (%s)%s',
                   'attempts_p' || v_no, _tf_add_partition.first_task_id, v_end,
                   CASE WHEN v_layout.attempts_options IS NOT NULL
                        THEN format(' WITH (%s)', array_to_string(v_layout.attempts_options, ', ')) ELSE '' END);
    EXECUTE format('ALTER TABLE taskforge.%I ADD CONSTRAINT %I FOREIGN KEY (task_id) REFERENCES taskforge.%I (task_id) '
                   'ON DELETE CASCADE',
                   'attempts_p' || v_no, 'attempts_p' || v_no || '_task_id_fkey', 'tasks_p' || v_no);
    INSERT INTO taskforge.history_partitions (partition_no, first_task_id, end_task_id, created_at)
    VALUES (v_no, _tf_add_partition.first_task_id, v_end, clock_timestamp());
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_add_partition(bigint) IS
    'Private: create tasks_p<N> and attempts_p<N> for the task_id range starting at first_task_id (tasks_per_partition ids), attempts referring to their twin, and record it in history_partitions.';
REVOKE ALL ON FUNCTION taskforge._tf_add_partition(bigint) FROM PUBLIC;

-- >>> db/functions/_tf_attempt_row_ok.sql
-- taskforge._tf_attempt_row_ok(state text, outcome text, started_at timestamptz,
--     lease_expires_at timestamptz, finished_at timestamptz)
--   -> boolean                                                               (private helper)
--
-- Purpose:    the rules across the columns of one taskforge.attempts row, the body of its CHECK
--             constraint attempts_row_rules (db/schema/52_row_rules.sql). Each rule keeps its
--             own name, which a violation reports as the constraint:
--               attempts_final_iff_finished      finished_at and outcome set exactly when the
--                                                state is not RUNNING;
--               attempts_finished_after_start    finished_at >= started_at;
--               attempts_abandoned_after_expiry  an ABANDONED attempt finished at or after its
--                                                lease expired.
--             As in any CHECK, a rule that evaluates to NULL holds. Why a function, and why no
--             SET clause (every operator and type named in pg_catalog): as
--             taskforge._tf_task_row_ok.
-- Returns:    true when every rule holds.
-- Errors:     23514 check_violation naming the broken rule as the constraint (the first in the
--             order above), table taskforge.attempts.
-- Clock:      none.  Locks: none.
-- By hand:    harmless; IMMUTABLE (its result depends on its arguments only).
CREATE OR REPLACE FUNCTION taskforge._tf_attempt_row_ok(
    state text, outcome text, started_at timestamptz, lease_expires_at timestamptz,
    finished_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $fn$
DECLARE
    v_rule pg_catalog.text;
BEGIN
    v_rule := CASE
        WHEN ((state OPERATOR(pg_catalog.=) 'RUNNING') OPERATOR(pg_catalog.=) (finished_at IS NULL)
              AND (state OPERATOR(pg_catalog.=) 'RUNNING') OPERATOR(pg_catalog.=) (outcome IS NULL)) IS FALSE
            THEN 'attempts_final_iff_finished'
        WHEN (finished_at IS NULL OR finished_at OPERATOR(pg_catalog.>=) started_at) IS FALSE
            THEN 'attempts_finished_after_start'
        WHEN (state OPERATOR(pg_catalog.<>) 'ABANDONED' OR finished_at OPERATOR(pg_catalog.>=) lease_expires_at) IS FALSE
            THEN 'attempts_abandoned_after_expiry'
    END;
    IF v_rule IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "attempts" violates check constraint "%"', v_rule
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule, SCHEMA = 'taskforge', TABLE = 'attempts';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_attempt_row_ok(text, text, timestamptz, timestamptz, timestamptz) IS
    'Private: the body of CHECK attempts_row_rules: true when every rule across the columns of an attempts row holds, else 23514 naming the broken rule.';
REVOKE ALL ON FUNCTION taskforge._tf_attempt_row_ok(
    text, text, timestamptz, timestamptz, timestamptz
) FROM PUBLIC;

-- >>> db/functions/_tf_attempt_state_after.sql
-- taskforge._tf_attempt_state_after(outcome text) -> text                  (private helper)
--
-- Purpose:    the final state an attempt takes for an outcome, written once for tf_finalize,
--             the batch finalize (_tf_finalize_attempts) and tf_recover:
--               succeeded -> SUCCEEDED; failed, retryable -> FAILED; cancelled -> CANCELLED;
--               lease_expired, timed_out -> ABANDONED.
-- Parameters: outcome  as stored in attempts.outcome.
-- Returns:    the attempt state, or NULL for an unknown outcome (callers validate first).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling query (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_attempt_state_after(outcome text)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT CASE outcome
        WHEN 'succeeded' THEN 'SUCCEEDED'
        WHEN 'failed' THEN 'FAILED'
        WHEN 'retryable' THEN 'FAILED'
        WHEN 'cancelled' THEN 'CANCELLED'
        WHEN 'lease_expired' THEN 'ABANDONED'
        WHEN 'timed_out' THEN 'ABANDONED'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_attempt_state_after(text) IS
    'Private: the final attempt state for an outcome (succeeded|failed|retryable|cancelled|lease_expired|timed_out).';
REVOKE ALL ON FUNCTION taskforge._tf_attempt_state_after(text) FROM PUBLIC;

-- >>> db/functions/_tf_broken_invariant.sql
-- taskforge._tf_broken_invariant(problem text) -> text                     (private helper)
--
-- Purpose:    abort the caller when a rule of the state machine turns out broken in the data
--             (a row changed outside the tf_* functions), so that nothing is written on top of
--             it. Callable inside a query (it returns text for the type checker).
-- Parameters: problem  what is broken, naming the rows.
-- Returns:    never; always raises.
-- Errors:     XX000 (internal_error) with the problem as message.
-- Locks:      none.  Clock: none.  By hand: harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_broken_invariant(problem text)
RETURNS text
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = 'taskforge: ' || problem;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_broken_invariant(text) IS
    'Private: raises XX000 naming a broken state-machine rule found in the data.';
REVOKE ALL ON FUNCTION taskforge._tf_broken_invariant(text) FROM PUBLIC;

-- >>> db/functions/_tf_cap_error.sql
-- taskforge._tf_cap_error(error jsonb) -> jsonb                      (private helper)
--
-- Purpose:    make a worker-reported error safe and bounded before it is stored on the task
--             and the attempt. A non-object value becomes {"message": value}. When the JSON text
--             is longer than 16 KiB, every string member is cut to 4,000 characters (marked with
--             "truncated": true); if it is still too long, only {"type", "message" (4,000
--             characters, fewer if escaping makes the JSON text longer than 16 KiB),
--             "truncated": true} is kept, so the stored JSON text never exceeds 16 KiB.
--             An error nested more than 100 levels deep (taskforge._tf_json_too_deep) becomes
--             {"type", "message": its JSON text cut to 4,000 characters, "truncated": true}.
--             jsonb cannot hold NUL characters or
--             unpaired surrogates, so a value that reached this function is already storable;
--             clients strip them before encoding (the Python worker does).
-- Returns:    jsonb object, or NULL for NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cap_error(error jsonb)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c_max_bytes constant int := 16384;
    c_max_chars constant int := 4000;
    v_error jsonb := error;
    v_type text;
    v_message text;
    v_chars int;
BEGIN
    IF v_error IS NULL OR v_error = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v_error) <> 'object' THEN
        v_error := jsonb_build_object('message', v_error);
    END IF;
    -- Too deep to hand out (taskforge._tf_json_too_deep): keep its text, not its structure.
    IF taskforge._tf_json_too_deep(v_error) THEN
        v_error := jsonb_build_object('type', coalesce(left(v_error ->> 'type', 200), 'error'),
                                      'message', left(v_error::text, c_max_chars), 'truncated', true);
    END IF;
    IF octet_length(v_error::text) <= c_max_bytes THEN
        RETURN v_error;
    END IF;
    SELECT jsonb_object_agg(key,
               CASE WHEN jsonb_typeof(value) = 'string' AND length(value #>> '{}') > c_max_chars
                    THEN to_jsonb(left(value #>> '{}', c_max_chars))
                    ELSE value END)
           || jsonb_build_object('truncated', true)
      INTO v_error
      FROM jsonb_each(v_error);
    IF octet_length(v_error::text) <= c_max_bytes THEN
        RETURN v_error;
    END IF;
    -- Last resort: type and message only, halving the cut until the JSON text (where escaping
    -- can make one character six bytes) fits.
    v_type := coalesce(v_error ->> 'type', 'error');
    v_message := coalesce(v_error ->> 'message', v_error::text);
    v_chars := c_max_chars;
    LOOP
        v_error := jsonb_build_object('type', left(v_type, least(v_chars, 200)),
                                      'message', left(v_message, v_chars), 'truncated', true);
        EXIT WHEN octet_length(v_error::text) <= c_max_bytes OR v_chars = 0;
        v_chars := v_chars / 2;
    END LOOP;
    RETURN v_error;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cap_error(jsonb) IS
    'Private: wraps a non-object error as {"message": ...} and caps its size at 16 KiB (strings cut to 4,000 characters).';
REVOKE ALL ON FUNCTION taskforge._tf_cap_error(jsonb) FROM PUBLIC;

-- >>> db/functions/_tf_check_batch.sql
-- taskforge._tf_check_batch(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[] DEFAULT NULL, results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL,
--     finalize boolean DEFAULT false) -> void                               (private helper)
--
-- Purpose:    validate the element-aligned arguments of the batch functions (tf_renew_many,
--             tf_finalize_many, tf_finalize_and_claim), before anything is locked or written.
--             Element i is (task_ids[i], attempt_numbers[i]) and, when finalize is true,
--             outcomes[i], results[i], errors[i].
-- Parameters: worker_id        must not be NULL.
--             task_ids         a one-dimensional array of 1..1000 task ids, each a whole
--                              number within bigint (taskforge._tf_check_task_id), no task
--                              twice (one call holds one answer per task).
--             attempt_numbers  a one-dimensional array of the same length, each a whole number
--                              from 1 to 2147483647 (taskforge._tf_check_int).
--             Both are numeric[], as the public batch functions declare them, so that any
--             number reaches this check; callers convert them to bigint[] and int[] after it.
--             Element rule: taskforge._tf_token_ok.
--             finalize         true for the finalize functions: then outcomes is a
--                              one-dimensional array of the same length, each succeeded |
--                              failed | retryable | cancelled; results and errors are NULL or
--                              such arrays; each result at most 1 MiB as JSON text and nested
--                              at most 100 levels deep (element rule: taskforge._tf_outcome_ok).
--                              Errors are not checked: any error is storable
--                              (taskforge._tf_cap_error).
-- Returns:    nothing.
-- Errors:     TF400 naming the argument, and for an element its position ('task_ids[3]' is
--             the third element, whatever the array's lower bound), in this order: the shapes
--             of task_ids and attempt_numbers, their first bad element, the first repeated
--             task, the shapes of outcomes, results and errors, the first bad outcome or result.
-- Plans:      the elements are read in one pass (one statement) whatever their number, a
--             second counts distinct tasks when there are several; the messages are built only
--             when something is wrong. A caller may skip this check for a certainly valid batch
--             of one (taskforge._tf_valid_batch_of_one, which applies the same element rules).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_batch(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[] DEFAULT NULL,
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL,
    finalize boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_n int := cardinality(task_ids);
    v_bad_token bigint;
    v_bad_finalize bigint;
    v_distinct bigint;
    v_bad_ord bigint;
    v_bad_task_id numeric;
    v_bad_attempt numeric;
    v_bad_outcome text;
    v_bad_result jsonb;
BEGIN
    IF worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    IF v_n IS NULL OR v_n NOT BETWEEN 1 AND 1000 OR array_ndims(task_ids) <> 1 THEN
        PERFORM taskforge._tf_invalid('task_ids', format('must be a one-dimensional array of 1 to 1000 elements, got %s',
            coalesce(v_n::text, 'NULL')));
    END IF;
    IF cardinality(attempt_numbers) IS DISTINCT FROM v_n OR array_ndims(attempt_numbers) <> 1 THEN
        PERFORM taskforge._tf_invalid('attempt_numbers', format(
            'must be a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, coalesce(cardinality(attempt_numbers)::text, 'NULL')));
    END IF;
    IF finalize THEN
        -- Shapes only here; the elements are read below, in the same pass as the tokens.
        IF cardinality(outcomes) IS DISTINCT FROM v_n OR array_ndims(outcomes) <> 1 THEN
            v_bad_finalize := -1;
        ELSIF results IS NOT NULL AND (cardinality(results) <> v_n OR array_ndims(results) <> 1) THEN
            v_bad_finalize := -2;
        ELSIF errors IS NOT NULL AND (cardinality(errors) <> v_n OR array_ndims(errors) <> 1) THEN
            v_bad_finalize := -3;
        END IF;
    END IF;

    -- One pass over the elements: the first bad token (taskforge._tf_token_ok) and the first
    -- bad outcome or result (taskforge._tf_outcome_ok); then, for several, whether a task repeats. Elements are named by their position (1-based), whatever the
    -- arrays' lower bounds, and checked as read (not looked up again by subscript: '[2:3]={...}'
    -- has no element 1).
    SELECT min(r.ord) FILTER (WHERE NOT coalesce(taskforge._tf_token_ok(r.task_id, r.attempt_number), false)),
           CASE WHEN finalize AND v_bad_finalize IS NULL THEN
               min(r.ord) FILTER (WHERE NOT coalesce(taskforge._tf_outcome_ok(r.outcome, r.result), false))
           END
      INTO v_bad_token, v_bad_ord
      FROM unnest(task_ids, attempt_numbers,
                  CASE WHEN finalize AND v_bad_finalize IS NULL THEN outcomes END,
                  CASE WHEN finalize AND v_bad_finalize IS NULL THEN results END)
           WITH ORDINALITY AS r(task_id, attempt_number, outcome, result, ord);
    IF v_n > 1 AND v_bad_token IS NULL THEN
        SELECT count(DISTINCT u.task_id) INTO v_distinct FROM unnest(task_ids) AS u(task_id);
    END IF;

    IF v_bad_token IS NOT NULL THEN
        SELECT r.task_id, r.attempt_number INTO v_bad_task_id, v_bad_attempt
          FROM unnest(task_ids, attempt_numbers) WITH ORDINALITY AS r(task_id, attempt_number, ord)
         WHERE r.ord = v_bad_token;
        -- Whichever of the two is bad raises, the task id first.
        PERFORM taskforge._tf_check_task_id(format('task_ids[%s]', v_bad_token), v_bad_task_id);
        PERFORM taskforge._tf_check_int(format('attempt_numbers[%s]', v_bad_token), v_bad_attempt, 1, 2147483647);
    END IF;
    IF v_distinct < v_n THEN
        SELECT r.ord, r.task_id INTO v_bad_ord, v_bad_task_id
          FROM (SELECT u.ord, u.task_id, row_number() OVER (PARTITION BY u.task_id ORDER BY u.ord) AS seen
                  FROM unnest(task_ids) WITH ORDINALITY AS u(task_id, ord)) r
         WHERE r.seen > 1
         ORDER BY r.ord
         LIMIT 1;
        PERFORM taskforge._tf_invalid(format('task_ids[%s]', v_bad_ord),
            format('task %s appears more than once in one call', v_bad_task_id));
    END IF;
    IF v_bad_finalize = -1 THEN
        PERFORM taskforge._tf_invalid('outcomes', format('must be a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, coalesce(cardinality(outcomes)::text, 'NULL')));
    ELSIF v_bad_finalize = -2 THEN
        PERFORM taskforge._tf_invalid('results', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(results)));
    ELSIF v_bad_finalize = -3 THEN
        PERFORM taskforge._tf_invalid('errors', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(errors)));
    END IF;
    IF v_bad_ord IS NOT NULL THEN
        SELECT r.outcome, r.result INTO v_bad_outcome, v_bad_result
          FROM unnest(outcomes, results) WITH ORDINALITY AS r(outcome, result, ord)
         WHERE r.ord = v_bad_ord;
        PERFORM taskforge._tf_check_outcome(format('outcomes[%s]', v_bad_ord), format('results[%s]', v_bad_ord),
                                            v_bad_outcome, v_bad_result);
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_batch(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean) IS
    'Private: validates worker_id and the element-aligned arrays of the batch functions (task_ids, attempt_numbers; with finalize also outcomes, results, errors), or raises TF400 naming the argument and element.';
REVOKE ALL ON FUNCTION taskforge._tf_check_batch(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean
) FROM PUBLIC;

-- >>> db/functions/_tf_check_fencing.sql
-- taskforge._tf_check_fencing(task_id numeric, worker_id uuid, attempt_number numeric) -> void
--                                                                       (private helper)
--
-- Purpose:    validate the fencing token (task, worker, attempt) a worker gives tf_renew and
--             tf_finalize, before anything is locked or written.
-- Parameters: task_id  a whole number within bigint (taskforge._tf_check_task_id).
--             worker_id  must not be NULL.
--             attempt_number  a whole number from 1 to 2147483647 (the type of attempt numbers).
--             The public functions declare task_id and attempt_number numeric, so that any
--             number a caller writes reaches this check (TF400, not 42883 or 22003); once it
--             passed, they convert them to bigint and int before any query uses them.
-- Returns:    nothing.
-- Errors:     TF400 naming the argument (checked in the order above).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_fencing(task_id numeric, worker_id uuid, attempt_number numeric)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    -- The bounds are tested inline first: the checker's call costs more than the test.
    IF task_id IS NULL OR task_id NOT BETWEEN -9223372036854775808 AND 9223372036854775807 OR task_id <> trunc(task_id) THEN
        PERFORM taskforge._tf_check_task_id('task_id', task_id);
    END IF;
    IF worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    IF attempt_number IS NULL OR attempt_number NOT BETWEEN 1 AND 2147483647 OR attempt_number <> trunc(attempt_number) THEN
        PERFORM taskforge._tf_check_int('attempt_number', attempt_number, 1, 2147483647);
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_fencing(numeric, uuid, numeric) IS
    'Private: validates the (task_id, worker_id, attempt_number) a worker passes to tf_renew and tf_finalize, or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_fencing(numeric, uuid, numeric) FROM PUBLIC;

-- >>> db/functions/_tf_check_flow_key.sql
-- taskforge._tf_check_flow_key(argument text, value text, nullable boolean DEFAULT true) -> void
--                                                                        (private helper)
--
-- Purpose:    the one home of the flow-key rule (the domain taskforge.flow_key: 1..200
--             characters) as a TF400 naming the argument, for tf_submit's rate_key,
--             concurrency_key and ordering_key (taskforge._tf_submit_one) and the keys of
--             tf_set_rate_limit and tf_set_concurrency_limit.
-- Parameters: argument  the name to report ('rate_key', 'requests[3].ordering_key').
--             value     the key.
--             nullable  true: NULL passes (no key); false: NULL is refused.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must be 1 to 200 characters, got N' (or 'got NULL').
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_flow_key(argument text, value text, nullable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF (value IS NULL AND NOT nullable) OR length(value) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid(argument, format('must be 1 to 200 characters, got %s',
            coalesce(length(value)::text, 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_flow_key(text, text, boolean) IS
    'Private: validates a rate, concurrency or ordering key (1..200 characters; NULL when nullable) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_flow_key(text, text, boolean) FROM PUBLIC;

-- >>> db/functions/_tf_check_int.sql
-- taskforge._tf_check_int(argument text, value numeric, min_value bigint, max_value bigint) -> void
--                                                                     (private helper)
--
-- Purpose:    validate a whole-number argument (a batch size, a priority, a budget).
-- Parameters: argument  parameter name for the error message; value  the argument (NULL is
--             refused); min_value, max_value  inclusive bounds. value is numeric so that the
--             public functions, whose whole-number parameters are numeric (any number a caller
--             writes reaches the body: 3000000000, '99999999999999999999', 2.5), check them here.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must be between <min> and <max>, got <value|NULL>', or
--             '<argument>: must be a whole number between <min> and <max>, got 2.5'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_int(argument text, value numeric, min_value bigint, max_value bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF value IS NULL OR value NOT BETWEEN min_value AND max_value THEN
        PERFORM taskforge._tf_invalid(argument, format('must be between %s and %s, got %s',
            min_value, max_value, coalesce(left(value::text, 100), 'NULL')));
    END IF;
    IF value <> trunc(value) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a whole number between %s and %s, got %s',
            min_value, max_value, left(value::text, 100)));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_int(text, numeric, bigint, bigint) IS
    'Private: validates a whole-number argument within inclusive bounds or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_int(text, numeric, bigint, bigint) FROM PUBLIC;

-- >>> db/functions/_tf_check_name.sql
-- taskforge._tf_check_name(argument text, name text, kind text) -> void  (private helper)
--
-- Purpose:    validate one queue, task type or schedule name argument against its rule
--             (taskforge._tf_name_pattern), with the one TF400 message for a bad name.
-- Parameters: argument  the parameter name for the error ('queue', 'requests[3].queue', ...).
--             name      the value; NULL is refused.
--             kind      'queue' | 'task_type' | 'schedule'.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must match <pattern>, got <quoted name or NULL>'.
-- Locks:      none.  Clock: none.  By hand: harmless.
-- Hot paths test the pattern inline first and call this only to raise.
CREATE OR REPLACE FUNCTION taskforge._tf_check_name(argument text, name text, kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF name IS NULL OR name !~ taskforge._tf_name_pattern(kind) THEN
        PERFORM taskforge._tf_invalid(argument, format('must match %s, got %s', taskforge._tf_name_pattern(kind),
            coalesce(quote_literal(left(name, 100)), 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_name(text, text, text) IS
    'Private: validates one queue or task type name (taskforge._tf_name_pattern) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_name(text, text, text) FROM PUBLIC;

-- >>> db/functions/_tf_check_names.sql
-- taskforge._tf_check_names(argument text, names text[], kind text) -> void   (private helper)
--
-- Purpose:    validate an array of queue names or task type names given to tf_claim or
--             tf_register_worker, with the same rules tf_submit and tf_register_task_type apply
--             to a single name. NULL (the whole array) is allowed and means "any"; an empty
--             array is allowed (it matches nothing); a NULL or malformed element is not.
-- Parameters: argument  the parameter name for the error message ('queues', 'task_types').
--             names     text[] or NULL.
--             kind      'queue' | 'task_type' (the patterns: taskforge._tf_name_pattern)
-- Returns:    nothing.
-- Errors:     TF400 naming the argument and the first bad element.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_names(argument text, names text[], kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_pattern text := taskforge._tf_name_pattern(kind);
    v_bad text;
    v_found boolean;
BEGIN
    IF names IS NULL THEN
        RETURN;
    END IF;
    IF array_ndims(names) > 1 THEN
        PERFORM taskforge._tf_invalid(argument, 'must be a one-dimensional array');
    END IF;
    SELECT true, n INTO v_found, v_bad
      FROM unnest(names) AS n
     WHERE n IS NULL OR n !~ v_pattern
     LIMIT 1;
    IF v_found THEN
        PERFORM taskforge._tf_invalid(argument, format('every element must match %s, got %s',
            v_pattern, coalesce(quote_literal(left(v_bad, 100)), 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_names(text, text[], text) IS
    'Private: validates an array of queue or task type names (NULL = any) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_names(text, text[], text) FROM PUBLIC;

-- >>> db/functions/_tf_check_outcome.sql
-- taskforge._tf_check_outcome(outcome_argument text, result_argument text, outcome text,
--     result jsonb) -> void                                               (private helper)
--
-- Purpose:    validate one finalize outcome and its result, with the message naming the
--             argument: tf_finalize's outcome and result, or element i of a batch's outcomes
--             and results (taskforge._tf_check_batch). The rule itself, as a test that raises
--             nothing, is taskforge._tf_outcome_ok; this raises its precise error.
-- Parameters: outcome_argument, result_argument  names for the messages ('outcome',
--             'outcomes[3]', ...); outcome  succeeded | failed | retryable | cancelled;
--             result  NULL, or JSON of at most 1 MiB as text nested at most 100 levels
--             (taskforge._tf_json_too_deep).
-- Returns:    nothing.
-- Errors:     TF400 '<outcome_argument>: must be one of succeeded, failed, retryable, cancelled;
--             got <value|NULL>', '<result_argument>: must be at most 1048576 bytes as JSON text,
--             got <n>', '<result_argument>: must be nested at most 100 levels deep ...'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_outcome(outcome_argument text, result_argument text, outcome text,
                                                       result jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c_max_result_bytes constant int := 1048576;  -- as in taskforge._tf_outcome_ok
BEGIN
    IF outcome IS NULL OR outcome NOT IN ('succeeded', 'failed', 'retryable', 'cancelled') THEN
        PERFORM taskforge._tf_invalid(outcome_argument, format('must be one of succeeded, failed, retryable, cancelled; got %s',
            coalesce(quote_literal(left(outcome, 100)), 'NULL')));
    END IF;
    IF octet_length(result::text) > c_max_result_bytes THEN
        PERFORM taskforge._tf_invalid(result_argument, format('must be at most %s bytes as JSON text, got %s',
            c_max_result_bytes, octet_length(result::text)));
    END IF;
    IF taskforge._tf_json_too_deep(result) THEN
        PERFORM taskforge._tf_invalid(result_argument,
            'must be nested at most 100 levels deep (objects and arrays, the result itself counting as 1), got more');
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_outcome(text, text, text, jsonb) IS
    'Private: validates a finalize outcome and its result, or raises TF400 naming the given argument (tf_finalize; an element of a batch finalize).';
REVOKE ALL ON FUNCTION taskforge._tf_check_outcome(text, text, text, jsonb) FROM PUBLIC;

-- >>> db/functions/_tf_check_seconds.sql
-- taskforge._tf_check_seconds(argument text, value double precision, min_seconds double precision,
--                             max_seconds double precision, min_exclusive boolean DEFAULT false,
--                             unit text DEFAULT 'seconds')
--   -> double precision                                             (private helper)
--
-- Purpose:    validate a duration given in seconds (docs/design.md §3: the SQL API takes seconds),
--             or another finite quantity named by unit (a rate: 'tokens per second').
-- Parameters: argument      parameter name for the error message.
--             value         seconds; NULL, NaN and +/-Infinity are rejected.
--             min_seconds, max_seconds  inclusive bounds (min exclusive when min_exclusive).
--             unit          how the message names the quantity ('seconds' by default).
-- Returns:    value unchanged.
-- Errors:     TF400 naming the argument.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_seconds(
    argument text, value double precision, min_seconds double precision,
    max_seconds double precision, min_exclusive boolean DEFAULT false, unit text DEFAULT 'seconds')
RETURNS double precision
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF value IS NULL THEN
        PERFORM taskforge._tf_invalid(argument, 'must not be NULL');
    END IF;
    IF value = 'NaN'::float8 OR value IN ('Infinity'::float8, '-Infinity'::float8) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a finite number of %s, got %s', unit, value));
    END IF;
    IF value > max_seconds OR value < min_seconds OR (min_exclusive AND value = min_seconds) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be %s %s and at most %s %s, got %s',
            CASE WHEN min_exclusive THEN 'greater than' ELSE 'at least' END, min_seconds, max_seconds, unit, value));
    END IF;
    RETURN value;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_seconds(text, double precision, double precision, double precision, boolean, text) IS
    'Private: validates a duration in seconds, or a quantity of the given unit (finite, within bounds), or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_seconds(
    text, double precision, double precision, double precision, boolean, text
) FROM PUBLIC;

-- >>> db/functions/_tf_check_task_id.sql
-- taskforge._tf_check_task_id(argument text, task_id numeric) -> void   (private helper)
--
-- Purpose:    validate a task id a caller passes (tf_cancel, tf_retry, the fencing token of
--             tf_renew and tf_finalize, each element of the batch forms' task_ids). The public
--             functions declare task ids numeric so that any number a caller writes reaches
--             this check (TF400, not 42883 "function does not exist" or 22003); once it
--             passed they convert the id to bigint before a query uses it. A whole number
--             within bigint that names no task stays that function's business (TF404, or a
--             per-task result in the batch forms).
-- Parameters: argument  the name to report ('task_id', 'task_ids[3]').
--             task_id   the value; NULL is refused.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must not be NULL', or '<argument>: must be a whole number
--             within bigint, got <value>'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_task_id(argument text, task_id numeric)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF task_id IS NULL THEN
        PERFORM taskforge._tf_invalid(argument, 'must not be NULL');
    END IF;
    IF task_id NOT BETWEEN -9223372036854775808 AND 9223372036854775807 OR task_id <> trunc(task_id) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a whole number within bigint, got %s',
            left(task_id::text, 100)));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_task_id(text, numeric) IS
    'Private: validates a task id argument (not NULL, a whole number within bigint) or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_task_id(text, numeric) FROM PUBLIC;

-- >>> db/functions/_tf_claim_aged.sql
-- taskforge._tf_claim_aged(queue text, priority_per_second double precision, task_types text[],
--     max_tasks int, now timestamptz) -> bigint[]                        (private helper)
--
-- Purpose:    the pick of one queue with priority aging (tf_set_queue_aging): up to max_tasks of
--             its due QUEUED plain tasks (no flow key; in task_types when given) in the order
--             effective priority DESC (taskforge._tf_claim_order), created_at, task_id, locked
--             FOR UPDATE SKIP LOCKED. Within one priority the order is created_at, so the best
--             max_tasks are among the first max_tasks of each priority present: a loose scan of
--             tasks_claim_queue_idx finds the priorities (one index descent each), each gives
--             its first max_tasks due tasks, and the best of those are locked in order.
-- Parameters: queue, priority_per_second  the queue and its aging rate (priority points per
--                                         second since submission).
--             task_types, max_tasks, now  as taskforge._tf_claim_pick's.
-- Returns:    the ids locked, in claim order (at most max_tasks; fewer when others hold rows).
-- Errors:     none.  Locks: FOR UPDATE SKIP LOCKED on the ids returned.
-- Plans:      planned per call (aging is opt-in): cost follows the number of distinct
--             priorities waiting in the queue times max_tasks.
-- Clock:      now (the caller's): the due test and each task's wait.
-- By hand:    no; call tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_aged(
    queue text,
    priority_per_second double precision,
    task_types text[],
    max_tasks int,
    now timestamptz)
RETURNS bigint[]
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET enable_sort = on
AS $fn$
    WITH RECURSIVE levels AS (
        (SELECT t.priority FROM taskforge.tasks t
          WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
          ORDER BY t.priority DESC LIMIT 1)
        UNION ALL
        SELECT n.priority
          FROM levels l
         CROSS JOIN LATERAL (SELECT t.priority FROM taskforge.tasks t
                              WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
                                AND t.priority < l.priority
                              ORDER BY t.priority DESC LIMIT 1) n
    ), candidates AS (
        SELECT c.task_id
          FROM levels l
         CROSS JOIN LATERAL (SELECT t.task_id FROM taskforge.tasks t
                              WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
                                AND t.priority = l.priority AND t.scheduled_at <= _tf_claim_aged.now
                                AND t.attempt_count < t.max_attempts
                                AND (_tf_claim_aged.task_types IS NULL OR t.task_type = ANY (_tf_claim_aged.task_types))
                              ORDER BY t.created_at, t.task_id
                              LIMIT _tf_claim_aged.max_tasks) c
    ), locked AS (
        SELECT t.task_id, t.priority, t.created_at
          FROM taskforge.tasks t
         WHERE t.task_id IN (SELECT c.task_id FROM candidates c) AND t.state = 'QUEUED'
         ORDER BY t.priority + _tf_claim_aged.priority_per_second
                      * greatest(0, extract(epoch FROM _tf_claim_aged.now - t.created_at)::double precision) DESC,
                  t.created_at, t.task_id
         LIMIT _tf_claim_aged.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    )
    SELECT coalesce(array_agg(l.task_id ORDER BY l.priority + _tf_claim_aged.priority_per_second
                                  * greatest(0, extract(epoch FROM _tf_claim_aged.now - l.created_at)::double precision) DESC,
                              l.created_at, l.task_id), '{}')
      FROM locked l;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_aged(text, double precision, text[], int, timestamptz) IS
    'Private: the claim''s pick of one queue with priority aging (effective priority DESC, created_at, task_id; SKIP LOCKED); returns the locked ids in claim order.';
REVOKE ALL ON FUNCTION taskforge._tf_claim_aged(text, double precision, text[], int, timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_claim_keyed.sql
-- taskforge._tf_claim_keyed(worker_id uuid, queues text[], task_types text[], max_tasks int,
--     now timestamptz, picked bigint[], held_queues text[], held_room int[]) -> bigint[]
--                                                                        (private helper)
--
-- Purpose:    the keyed pick of a claim (taskforge._tf_claim_pick calls it when a keyed task,
--             one with a rate, concurrency or ordering key, is due): choose and lock due QUEUED
--             keyed tasks under their flow rules (docs/flow-control.md):
--               concurrency key  at most the key's max_running RUNNING (counted under the
--                                key's taskforge.concurrency_keys row lock, as a queue limit);
--               ordering key     only the key's head (its unfinished task of lowest id) can
--                                start, and only while none of the key is RUNNING, read
--                                again under the key's taskforge.ordering_keys row lock, so
--                                its tasks run one at a time in id order;
--               rate key         one token of the key's bucket per task (taskforge.rate_limits,
--                                under its row lock; refilled to now, never backwards).
--             Fair claiming: candidates are taken group by group, a group being a concurrency
--             key (up to max_tasks of its tasks in claim order), an ordering key's head, or a
--             rate key's tasks that carry no other key; they are tried in the order priority
--             DESC, then the task's rank within its group (the first of every group before
--             the second of any), then the concurrency key served longest ago first
--             (concurrency_keys.last_claimed_at, stamped by each claim that starts one of its
--             tasks), then created_at, task_id. So with equal priorities a claim of one task
--             rotates across the keys that have work: with K such keys, a key's n-th waiting
--             task starts within about n * K claims, however long the other keys' backlogs.
--             A keyed task also competes with the claim's plain picks: it is taken only while
--             fewer than max_tasks tasks rank before it (plain picks ahead of it in claim order,
--             plus keyed tasks already taken), so no token or slot is spent on a task the
--             claim then drops.
-- Parameters: worker_id, queues, task_types, max_tasks, now
--                          as taskforge._tf_claim_pick's (validated there).
--             picked       the plain picks of the same claim (locked, QUEUED), in claim order.
--             held_queues, held_room
--                          the limited queues whose row lock this claim holds and the room
--                          left in each after its plain picks; keyed tasks of any other
--                          limited queue, and of paused queues, are not taken.
-- Returns:    the ids taken (locked FOR UPDATE by this transaction, QUEUED), at most
--             max_tasks; the caller starts them with its plain picks (taskforge._tf_turn).
-- Errors:     none of its own.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks taken, on the concurrency_keys rows of the
--             limited keys it takes from (and of unlimited ones, for the rotation stamp, when
--             free), on the rate_limits rows of the rate keys and the ordering_keys rows of the
--             ordering keys it takes from (the lock submits and tf_retry take too): a key whose
--             row another claimer holds is skipped this time, never waited for. Under
--             REPEATABLE READ or SERIALIZABLE, limited concurrency keys and rate-limited keys
--             are skipped (their counts need READ COMMITTED's fresh reads).
-- Exactness:  a rate key is skipped when its bucket was refilled at a later instant than this
--             claim's now (a claimer whose clock read came before another's commit), so the
--             bucket's refill times follow the claims' now in lock order and the window bound
--             burst + per_second * T holds for the attempts' started_at exactly. Likewise an
--             ordering key's head is skipped while an earlier task of its key finished later
--             than this claim's now (a finish committed between this claim's clock read and its
--             snapshot; tasks_ordering_finished_idx, a few rows at most), so each task of the key starts
--             (started_at) at or after the previous one's finished_at.
-- Plans:      planned per call (flow control is opt-in; the plain claim path keeps its static
--             plans). The groups are found by loose index scans of tasks_ordering_key_idx and
--             tasks_rate_key_idx and tasks_concurrency_key_idx (joined to their concurrency_keys
--             rows), so the cost follows the number of keys with waiting work, not the length of
--             their backlogs nor the keys used in the past.
-- Clock:      now (the caller's).
-- By hand:    no; call tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_keyed(
    worker_id uuid,
    queues text[],
    task_types text[],
    max_tasks int,
    now timestamptz,
    picked bigint[],
    held_queues text[],
    held_room int[])
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET enable_sort = on
SET enable_bitmapscan = on
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_claim_keyed.now;
    v_read_committed boolean := current_setting('transaction_isolation') = 'read committed';
    v_skip_queues text[];
    v_queue_room int[] := coalesce(_tf_claim_keyed.held_room, '{}');
    v_taken bigint[] := '{}';
    -- Concurrency keys met in this call: their room left (NULL: unlimited) and whether this
    -- call holds their row (for the rotation stamp); keys to skip.
    v_ck text[] := '{}';
    v_ck_room int[] := '{}';
    v_ck_held boolean[] := '{}';
    v_ck_used boolean[] := '{}';
    v_ck_skip text[] := '{}';
    -- Rate keys met in this call: tokens left (NULL: the key has no limit); keys to skip.
    v_rk text[] := '{}';
    v_rk_tokens double precision[] := '{}';
    v_rk_skip text[] := '{}';
    -- Ordering keys whose row another transaction holds (a submit or a claim): skipped.
    v_ok_skip text[] := '{}';
    v_i int;
    v_ahead int;
    v_found boolean;
    v_max int;
    v_room int;
    v_rate taskforge.rate_limits%ROWTYPE;
    c record;
BEGIN
    SELECT array_agg(q.queue) INTO v_skip_queues
      FROM taskforge.queues q
     WHERE q.paused_at IS NOT NULL
        OR (q.max_running IS NOT NULL AND q.queue <> ALL (coalesce(_tf_claim_keyed.held_queues, '{}')));
    v_skip_queues := coalesce(v_skip_queues, '{}');

    FOR c IN
        WITH RECURSIVE
        -- Ordering keys with unfinished tasks and their heads, with the columns the claim
        -- reads (a loose scan: one index descent and one heap fetch per key, no join after).
        heads AS (
            (SELECT t.ordering_key, t.task_id, t.state, t.concurrency_key, t.scheduled_at, t.attempt_count,
                    t.max_attempts, t.queue, t.task_type, t.priority, t.created_at, t.rate_key
               FROM taskforge.tasks t
              WHERE t.ordering_key IS NOT NULL AND t.finished_at IS NULL
              ORDER BY t.ordering_key, t.task_id LIMIT 1)
            UNION ALL
            SELECT n.ordering_key, n.task_id, n.state, n.concurrency_key, n.scheduled_at, n.attempt_count,
                   n.max_attempts, n.queue, n.task_type, n.priority, n.created_at, n.rate_key
              FROM heads h
             CROSS JOIN LATERAL (SELECT t.ordering_key, t.task_id, t.state, t.concurrency_key, t.scheduled_at,
                                        t.attempt_count, t.max_attempts, t.queue, t.task_type, t.priority,
                                        t.created_at, t.rate_key
                                   FROM taskforge.tasks t
                                  WHERE t.ordering_key > h.ordering_key AND t.finished_at IS NULL
                                  ORDER BY t.ordering_key, t.task_id LIMIT 1) n
        ),
        -- Rate keys of QUEUED tasks that carry no other key (a loose scan as well).
        rate_keys AS (
            (SELECT t.rate_key FROM taskforge.tasks t
              WHERE t.state = 'QUEUED' AND t.rate_key IS NOT NULL AND t.concurrency_key IS NULL
                AND t.ordering_key IS NULL
              ORDER BY t.rate_key LIMIT 1)
            UNION ALL
            SELECT n.rate_key
              FROM rate_keys r
             CROSS JOIN LATERAL (SELECT t.rate_key FROM taskforge.tasks t
                                  WHERE t.state = 'QUEUED' AND t.rate_key > r.rate_key AND t.concurrency_key IS NULL
                                    AND t.ordering_key IS NULL
                                  ORDER BY t.rate_key LIMIT 1) n
        ),
        -- Concurrency keys of QUEUED tasks (a loose scan of tasks_concurrency_key_idx), with
        -- their rows: keys without waiting work cost nothing, however many rows there are.
        ckeys AS (
            (SELECT t.concurrency_key FROM taskforge.tasks t
              WHERE t.state = 'QUEUED' AND t.concurrency_key IS NOT NULL
              ORDER BY t.concurrency_key LIMIT 1)
            UNION ALL
            SELECT n.concurrency_key
              FROM ckeys c
             CROSS JOIN LATERAL (SELECT t.concurrency_key FROM taskforge.tasks t
                                  WHERE t.state = 'QUEUED' AND t.concurrency_key > c.concurrency_key
                                  ORDER BY t.concurrency_key LIMIT 1) n
        ),
        candidates AS (
            -- Each concurrency key: its first due tasks in claim order (ordering heads only).
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, t.concurrency_key,
                   row_number() OVER (PARTITION BY k.concurrency_key ORDER BY t.priority DESC, t.created_at, t.task_id)
                       AS rank,
                   k.last_claimed_at AS served_at, t.ordering_key
              FROM ckeys w
              JOIN taskforge.concurrency_keys k ON k.concurrency_key = w.concurrency_key
             CROSS JOIN LATERAL (
                  SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, t.concurrency_key, t.ordering_key
                    FROM taskforge.tasks t
                   WHERE t.state = 'QUEUED' AND t.concurrency_key = k.concurrency_key
                     AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
                     AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
                     AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
                     AND t.queue <> ALL (v_skip_queues)
                     AND (t.ordering_key IS NULL
                          OR (NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                           WHERE e.ordering_key = t.ordering_key AND e.finished_at IS NULL
                                             AND e.task_id < t.task_id)
                              AND NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                               WHERE e.ordering_key = t.ordering_key AND e.finished_at > v_now
                                                 AND e.task_id < t.task_id)))
                   ORDER BY t.priority DESC, t.created_at, t.task_id
                   LIMIT _tf_claim_keyed.max_tasks) t
            UNION ALL
            -- Each ordering key's head, when it is a due QUEUED task without a concurrency key.
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, NULL, 1, NULL, t.ordering_key
              FROM heads t
             WHERE t.state = 'QUEUED' AND t.concurrency_key IS NULL
               AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
               AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
               AND t.queue <> ALL (v_skip_queues)
               -- The previous task of its key finished by this claim's now (Exactness above).
               AND NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                WHERE e.ordering_key = t.ordering_key AND e.finished_at > v_now
                                  AND e.task_id < t.task_id)
            UNION ALL
            -- Each rate key: its first due tasks that carry no other key.
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, NULL,
                   row_number() OVER (PARTITION BY r.rate_key ORDER BY t.priority DESC, t.created_at, t.task_id), NULL,
                   NULL
              FROM rate_keys r
             CROSS JOIN LATERAL (
                  SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key
                    FROM taskforge.tasks t
                   WHERE t.state = 'QUEUED' AND t.rate_key = r.rate_key AND t.concurrency_key IS NULL
                     AND t.ordering_key IS NULL
                     AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
                     AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
                     AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
                     AND t.queue <> ALL (v_skip_queues)
                   ORDER BY t.priority DESC, t.created_at, t.task_id
                   LIMIT _tf_claim_keyed.max_tasks) t
        )
        SELECT * FROM candidates
         ORDER BY priority DESC, rank, served_at NULLS FIRST, created_at, task_id
    LOOP
        EXIT WHEN cardinality(v_taken) >= _tf_claim_keyed.max_tasks;
        -- Plain picks ahead of it in claim order, plus the keyed tasks taken: the claim's room.
        IF cardinality(_tf_claim_keyed.picked) > 0 THEN
            SELECT count(*) INTO v_ahead FROM taskforge.tasks p
             WHERE p.task_id = ANY (_tf_claim_keyed.picked)
               AND (p.priority > c.priority OR (p.priority = c.priority AND (p.created_at, p.task_id) < (c.created_at, c.task_id)));
            CONTINUE WHEN v_ahead + cardinality(v_taken) >= _tf_claim_keyed.max_tasks;
        END IF;
        -- A limited queue: only one this claim holds, with room left.
        v_i := array_position(_tf_claim_keyed.held_queues, c.queue::text);
        CONTINUE WHEN v_i IS NOT NULL AND v_queue_room[v_i] <= 0;
        -- Its concurrency key: locked (or skipped) at first sight, then its room.
        IF c.concurrency_key IS NOT NULL THEN
            CONTINUE WHEN c.concurrency_key = ANY (v_ck_skip);
            IF NOT (c.concurrency_key = ANY (v_ck)) THEN
                SELECT true, k.max_running INTO v_found, v_max FROM taskforge.concurrency_keys k
                 WHERE k.concurrency_key = c.concurrency_key FOR UPDATE SKIP LOCKED;
                IF v_found IS NULL THEN
                    -- Held by another claimer: a limited key waits for the next claim; an
                    -- unlimited one is taken without its rotation stamp.
                    SELECT k.max_running INTO v_max FROM taskforge.concurrency_keys k
                     WHERE k.concurrency_key = c.concurrency_key;
                    IF v_max IS NOT NULL THEN
                        v_ck_skip := v_ck_skip || c.concurrency_key::text;
                        CONTINUE;
                    END IF;
                    v_room := NULL;
                ELSIF v_max IS NOT NULL THEN
                    IF NOT v_read_committed THEN
                        v_ck_skip := v_ck_skip || c.concurrency_key::text;
                        CONTINUE;
                    END IF;
                    SELECT v_max - count(*) INTO v_room FROM taskforge.tasks t
                     WHERE t.state = 'RUNNING' AND t.concurrency_key = c.concurrency_key;
                ELSE
                    v_room := NULL;
                END IF;
                v_ck := v_ck || c.concurrency_key::text;
                v_ck_room := v_ck_room || v_room;
                v_ck_held := v_ck_held || (v_found IS NOT NULL);
                v_ck_used := v_ck_used || false;
                v_found := NULL;
            END IF;
            v_i := array_position(v_ck, c.concurrency_key::text);
            CONTINUE WHEN v_ck_room[v_i] <= 0;
        END IF;
        -- Its rate key: the bucket locked (or skipped) at first sight and refilled to now.
        IF c.rate_key IS NOT NULL THEN
            CONTINUE WHEN c.rate_key = ANY (v_rk_skip);
            IF NOT (c.rate_key = ANY (v_rk)) THEN
                v_rate := NULL;
                SELECT * INTO v_rate FROM taskforge.rate_limits r WHERE r.rate_key = c.rate_key FOR UPDATE SKIP LOCKED;
                IF v_rate.rate_key IS NULL THEN
                    IF EXISTS (SELECT 1 FROM taskforge.rate_limits r WHERE r.rate_key = c.rate_key) THEN
                        v_rk_skip := v_rk_skip || c.rate_key::text;  -- held by another claimer
                        CONTINUE;
                    END IF;
                    v_rk := v_rk || c.rate_key::text;
                    v_rk_tokens := v_rk_tokens || NULL::double precision;  -- no limit
                ELSIF NOT v_read_committed OR v_rate.refilled_at > v_now THEN
                    v_rk_skip := v_rk_skip || c.rate_key::text;
                    CONTINUE;
                ELSE
                    v_rk := v_rk || c.rate_key::text;
                    v_rk_tokens := v_rk_tokens || least(v_rate.burst::double precision,
                        v_rate.tokens + v_rate.per_second * extract(epoch FROM v_now - v_rate.refilled_at)::double precision);
                END IF;
            END IF;
            v_i := array_position(v_rk, c.rate_key::text);
            CONTINUE WHEN v_rk_tokens[v_i] < 1;
        END IF;
        -- Its ordering key: the key's row locked (skipped when held elsewhere), then, read fresh
        -- under that lock, still the key's head with nothing of the key RUNNING (a task of the
        -- key redriven by tf_retry after a later one started, which tf_retry refuses under the
        -- same lock, or a claim that committed since this call's snapshot).
        IF c.ordering_key IS NOT NULL THEN
            CONTINUE WHEN c.ordering_key = ANY (v_ok_skip);
            PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = c.ordering_key FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                v_ok_skip := v_ok_skip || c.ordering_key::text;
                CONTINUE;
            END IF;
            -- Three probes, each on its own index (tasks_ordering_key_idx,
            -- tasks_ordering_finished_idx, tasks_lease_expiry_idx): an OR of the first two
            -- would be planned as one scan filtering a key's whole history.
            CONTINUE WHEN EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.ordering_key = c.ordering_key AND e.finished_at IS NULL
                                     AND e.task_id < c.task_id)
                       OR EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.ordering_key = c.ordering_key AND e.finished_at > v_now
                                     AND e.task_id < c.task_id)
                       OR EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.state = 'RUNNING' AND e.ordering_key = c.ordering_key);
        END IF;
        -- The task itself, if no other claimer has it.
        PERFORM 1 FROM taskforge.tasks t WHERE t.task_id = c.task_id AND t.state = 'QUEUED' FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        v_taken := v_taken || c.task_id;
        v_i := array_position(_tf_claim_keyed.held_queues, c.queue::text);
        IF v_i IS NOT NULL THEN
            v_queue_room[v_i] := v_queue_room[v_i] - 1;
        END IF;
        IF c.concurrency_key IS NOT NULL THEN
            v_i := array_position(v_ck, c.concurrency_key::text);
            v_ck_room[v_i] := v_ck_room[v_i] - 1;
            v_ck_used[v_i] := true;
        END IF;
        IF c.rate_key IS NOT NULL THEN
            v_i := array_position(v_rk, c.rate_key::text);
            v_rk_tokens[v_i] := v_rk_tokens[v_i] - 1;
        END IF;
    END LOOP;

    -- The buckets this call holds, as of now; the rotation stamps of the keys it served.
    IF cardinality(v_rk) > 0 THEN
        UPDATE taskforge.rate_limits r
           SET tokens = greatest(0, k.tokens), refilled_at = v_now
          FROM unnest(v_rk, v_rk_tokens) AS k(rate_key, tokens)
         WHERE r.rate_key = k.rate_key AND k.tokens IS NOT NULL;
    END IF;
    IF true = ANY (v_ck_used) THEN
        UPDATE taskforge.concurrency_keys k
           SET last_claimed_at = v_now
          FROM unnest(v_ck, v_ck_held, v_ck_used) AS u(concurrency_key, held, used)
         WHERE k.concurrency_key = u.concurrency_key AND u.held AND u.used;
    END IF;
    RETURN v_taken;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_keyed(uuid, text[], text[], int, timestamptz, bigint[], text[], int[]) IS
    'Private: the keyed pick of a claim (rate, concurrency and ordering keys, fair rotation across concurrency keys); returns the locked ids for taskforge._tf_turn.';
REVOKE ALL ON FUNCTION taskforge._tf_claim_keyed(
    uuid, text[], text[], int, timestamptz, bigint[], text[], int[]
) FROM PUBLIC;

-- >>> db/functions/_tf_claim_order.sql
-- taskforge._tf_claim_order(task_ids bigint[], max_tasks int, now timestamptz) -> bigint[]
--                                                                        (private helper)
--
-- Purpose:    the claim order, in one home: the first max_tasks of task_ids (tasks the claim
--             has locked) by effective priority DESC, created_at, task_id, where a task's
--             effective priority is its priority, plus, in a queue with priority aging
--             (tf_set_queue_aging), aging_per_second * the seconds since it was submitted
--             (database time, now). Without aging this is priority DESC, created_at, task_id,
--             the order of tasks_claim_order_idx. Used by taskforge._tf_claim_pick to merge
--             the picks of several paths (plain, limited and aged queues, keyed tasks).
-- Parameters: task_ids   locked task ids (any order; duplicates count once).
--             max_tasks  how many to keep (0..1000).
--             now        the claim's clock.
-- Returns:    the kept ids in claim order. The others stay locked by the caller's transaction,
--             unchanged, until it ends.
-- Errors:     none.  Locks: none.
-- Clock:      now (the caller's).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_order(task_ids bigint[], max_tasks int, now timestamptz)
RETURNS bigint[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
SET enable_sort = on
AS $fn$
    SELECT coalesce(array_agg(o.task_id ORDER BY o.rank), '{}')
      FROM (SELECT t.task_id,
                   row_number() OVER (ORDER BY t.priority + coalesce(q.aging_per_second, 0)
                                          * greatest(0, extract(epoch FROM _tf_claim_order.now - t.created_at)::double precision) DESC,
                                      t.created_at, t.task_id) AS rank
              FROM taskforge.tasks t
              LEFT JOIN taskforge.queues q ON q.queue = t.queue AND q.aging_per_second IS NOT NULL
             WHERE t.task_id = ANY (_tf_claim_order.task_ids)) AS o
     WHERE o.rank <= _tf_claim_order.max_tasks;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_order(bigint[], int, timestamptz) IS
    'Private: the first max_tasks of the given tasks in claim order (effective priority DESC with queue aging, created_at, task_id).';
REVOKE ALL ON FUNCTION taskforge._tf_claim_order(bigint[], int, timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_claim_pick.sql
-- taskforge._tf_claim_pick(worker_id uuid, queues text[], lease_seconds double precision,
--     max_tasks int, task_types text[], now timestamptz, finishing_ids bigint[] DEFAULT NULL,
--     finishing_attempts int[] DEFAULT NULL) -> bigint[]                 (private helper)
--
-- Purpose:    the choice of a claim, shared by tf_claim and tf_finalize_and_claim: validate the
--             filters, check the worker, then pick and lock up to max_tasks due QUEUED tasks
--             (state QUEUED, scheduled_at <= now, attempts remaining, in queues and task_types
--             when given) in the order priority DESC, created_at, task_id, skipping rows locked
--             by others. It writes nothing: the caller hands the ids to taskforge._tf_turn,
--             which makes each task RUNNING under a lease with attempt number + 1 and its
--             RUNNING attempt row, in the same transaction.
-- Parameters: worker_id      a registered, not deregistered worker (NULL is TF400).
--             queues         text[] or NULL (any queue); an empty array matches nothing.
--             lease_seconds  0 < s <= 86400.
--             max_tasks      0..1000 (0 validates and claims nothing).
--             task_types     text[] or NULL (any type); an empty array matches nothing.
--             now            the caller's clock_timestamp(), shared with taskforge._tf_turn.
--             finishing_ids, finishing_attempts
--                            the attempts the same call finalizes before these tasks start
--                            (tf_finalize_and_claim), validated by the caller; NULL for none.
--                            Only a limited queue looks at them (below).
-- Returns:    the ids of the picked tasks (0..max_tasks), in claim order, each locked FOR
--             UPDATE by this transaction and QUEUED; an empty array when nothing is eligible.
-- Errors:     TF400 naming the argument; TF404 unknown or deregistered worker. Nothing written.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen tasks rows.
-- Plans:      the usual case (no plain QUEUED task scheduled in the future, checked with one probe of
--             tasks_queued_due_idx; any number of queues up to one) runs one static statement
--             per filter shape (no queue or one queue; task_types or not), each with one cached
--             generic plan, never re-planned: an ordered walk of tasks_claim_order_idx (no
--             queue) or tasks_claim_queue_idx (one queue, equality on its first column) that
--             stops after max_tasks due rows. Sequential scans, bitmap scans and sorts are
--             disabled for the function (SET enable_* = off; jit = off, since those settings
--             inflate plan costs past jit_above_cost) so that plan does not depend on
--             statistics: a generic plan cached before the first ANALYZE of a fresh queue would
--             otherwise sort every QUEUED row on each claim. Two cases are planned for the call
--             instead (EXECUTE, with sorts and bitmap scans allowed again inside this function
--             only): several queues, and delayed tasks present (walking the claim order could
--             step over all of them; the planner sees the time and may read the few due rows
--             from tasks_queued_due_idx).
-- Queue controls: tasks of a paused queue (taskforge.queues.paused_at) are never picked. A
--             limited queue (max_running) is picked from only by the claimer holding its
--             taskforge.queues row lock (FOR UPDATE SKIP LOCKED: a claimer that finds it locked
--             skips the queue this time), and only up to max_running minus its RUNNING count,
--             counted after the lock is taken: since every claim of the queue holds that lock
--             until it commits, the count is exact and the limit is never exceeded. An attempt
--             the same call finalizes leaves the count when it will be accepted: its row is
--             locked here (SKIP LOCKED; a row held elsewhere still counts) and judged by the
--             guard at the same now as taskforge._tf_turn will judge it, so both agree. Under
--             REPEATABLE READ or SERIALIZABLE (an older snapshot) limited queues are skipped.
--             With no row in taskforge.queues the claim reads one empty partial index and
--             plans as before; a queue filter just loses the restricted queues; an unfiltered
--             claim steps over their tasks with a per-call plan.
-- Clock:      now (the caller's): the due test and the guard of finishing attempts.
-- Priority aging: a queue with aging (tf_set_queue_aging) is restricted too: the main pick
--             leaves it out and taskforge._tf_claim_aged picks it (inside the limited-queue loop
--             when it also has a limit), and every merge ranks by effective priority
--             (taskforge._tf_claim_order, the one home of the claim order).
-- Flow control: keyed tasks (a rate, concurrency or ordering key) are not in the indexes of the
--             pick above (their predicate says NOT keyed): when the same first statement finds a
--             due keyed task (tasks_keyed_due_idx, empty where flow control is not used), the
--             keyed pick (taskforge._tf_claim_keyed) chooses among them under their rules and
--             against the plain picks; the claim starts its choice and as many plain picks as
--             leave room, in claim order. An attempt the same call finalizes does not free a
--             concurrency key's slot for that call (the key is counted before the turn).
-- By hand:    use tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_pick(
    worker_id uuid,
    queues text[],
    lease_seconds double precision,
    max_tasks int,
    task_types text[],
    now timestamptz,
    finishing_ids bigint[] DEFAULT NULL,
    finishing_attempts int[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_bitmapscan = off
SET enable_sort = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_claim_pick.now;
    v_ids bigint[];
    v_latest timestamptz;
    v_registered boolean;
    v_registered_queues text[];
    v_registered_types text[];
    v_restricted text[];
    v_queues text[] := _tf_claim_pick.queues;
    v_excluded text[];
    v_limited_ids bigint[];
    v_more bigint[];
    v_limited record;
    v_room bigint;
    v_keyed_due timestamptz;
    v_keyed bigint[];
    v_held_queues text[] := '{}';
    v_held_room int[] := '{}';
    c_candidates constant text :=
        'SELECT t.task_id FROM taskforge.tasks t'
        ' WHERE t.state = ''QUEUED'' AND NOT t.keyed AND t.scheduled_at <= $1 AND t.attempt_count < t.max_attempts'
        '   AND ($2::text[] IS NULL OR t.queue = ANY ($2))'
        '   AND ($3::text[] IS NULL OR t.task_type = ANY ($3))'
        '   AND ($5::text[] IS NULL OR t.queue <> ALL ($5))'
        ' ORDER BY t.priority DESC, t.created_at, t.task_id'
        ' LIMIT $4 FOR UPDATE OF t SKIP LOCKED';
BEGIN
    IF _tf_claim_pick.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    -- The worker's registration, the latest due time of any plain QUEUED task (a backward step
    -- in tasks_queued_due_idx), the paused, limited or aged queues (queues_restricted_idx,
    -- usually empty) and the earliest due time of a keyed QUEUED task (tasks_keyed_due_idx,
    -- empty where flow control is not used), in one statement. The two task indexes are
    -- disjoint (NOT keyed, keyed), so neither probe can walk the other kind's rows.
    SELECT true, w.queues, w.task_types,
           (SELECT t.scheduled_at FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND NOT t.keyed ORDER BY t.scheduled_at DESC LIMIT 1),
           nullif(ARRAY(SELECT q.queue FROM taskforge.queues q
                         WHERE q.paused_at IS NOT NULL OR q.max_running IS NOT NULL OR q.aging_per_second IS NOT NULL),
                  '{}'),
           (SELECT t.scheduled_at FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND t.keyed ORDER BY t.scheduled_at LIMIT 1)
      INTO v_registered, v_registered_queues, v_registered_types, v_latest, v_restricted, v_keyed_due
      FROM taskforge.workers w
     WHERE w.worker_id = _tf_claim_pick.worker_id AND w.stopped_at IS NULL;
    -- Validation (the helpers raise TF400 naming the argument). The name arrays a worker
    -- registered with were validated by tf_register_worker: the same arrays need no second pass.
    IF NOT (v_registered AND _tf_claim_pick.queues IS NOT DISTINCT FROM v_registered_queues) THEN
        PERFORM taskforge._tf_check_names('queues', _tf_claim_pick.queues, 'queue');
    END IF;
    IF NOT (v_registered AND _tf_claim_pick.task_types IS NOT DISTINCT FROM v_registered_types) THEN
        PERFORM taskforge._tf_check_names('task_types', _tf_claim_pick.task_types, 'task_type');
    END IF;
    IF _tf_claim_pick.lease_seconds IS NULL
       OR NOT (_tf_claim_pick.lease_seconds > 0 AND _tf_claim_pick.lease_seconds <= 86400) THEN
        PERFORM taskforge._tf_check_seconds('lease_seconds', _tf_claim_pick.lease_seconds, 0, 86400, true);
    END IF;
    IF _tf_claim_pick.max_tasks IS NULL OR _tf_claim_pick.max_tasks NOT BETWEEN 0 AND 1000 THEN
        PERFORM taskforge._tf_check_int('max_tasks', _tf_claim_pick.max_tasks, 0, 1000);
    END IF;
    IF v_registered IS NULL THEN
        PERFORM taskforge._tf_unknown_worker(_tf_claim_pick.worker_id);
    END IF;
    IF _tf_claim_pick.max_tasks = 0 THEN
        RETURN '{}';
    END IF;

    IF v_restricted IS NOT NULL THEN
        -- Paused and limited queues leave the main pick (see Queue controls above): a queue
        -- filter loses them, an unfiltered claim steps over them.
        IF _tf_claim_pick.queues IS NULL THEN
            v_excluded := v_restricted;
        ELSE
            v_queues := ARRAY(SELECT q FROM unnest(_tf_claim_pick.queues) AS q WHERE q <> ALL (v_restricted));
        END IF;
        -- Each limited, unpaused queue this claim may take from, one at a time under its row
        -- lock (skipped when another claimer holds it), up to its free room. Only under READ
        -- COMMITTED, where the count below sees every claim committed before the lock.
        IF current_setting('transaction_isolation') = 'read committed' THEN
            PERFORM set_config('enable_sort', 'on', true), set_config('enable_bitmapscan', 'on', true);
            FOR v_limited IN
                SELECT q.queue, q.max_running, q.aging_per_second FROM taskforge.queues q
                 WHERE q.max_running IS NOT NULL AND q.paused_at IS NULL
                   AND (_tf_claim_pick.queues IS NULL OR q.queue = ANY (_tf_claim_pick.queues))
                 ORDER BY q.queue
                   FOR UPDATE SKIP LOCKED
            LOOP
                v_more := NULL;
                SELECT v_limited.max_running - count(*) INTO v_room
                  FROM taskforge.tasks t
                 WHERE t.state = 'RUNNING' AND t.queue = v_limited.queue;
                IF _tf_claim_pick.finishing_ids IS NOT NULL THEN
                    -- Attempts of this queue the same call ends (see Queue controls above).
                    SELECT v_room + count(*) INTO v_room
                      FROM (SELECT t.task_id, t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at
                              FROM taskforge.tasks t
                             WHERE t.task_id = ANY (_tf_claim_pick.finishing_ids) AND t.queue = v_limited.queue
                               FOR UPDATE SKIP LOCKED) AS t
                      JOIN unnest(_tf_claim_pick.finishing_ids, _tf_claim_pick.finishing_attempts)
                           AS f(task_id, attempt_number) ON f.task_id = t.task_id
                     WHERE taskforge._tf_guard(t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at,
                                               _tf_claim_pick.worker_id, f.attempt_number, v_now) IS NULL;
                END IF;
                IF v_room > 0 AND v_limited.aging_per_second IS NOT NULL THEN
                    v_more := taskforge._tf_claim_aged(v_limited.queue, v_limited.aging_per_second, _tf_claim_pick.task_types,
                                                       least(v_room, _tf_claim_pick.max_tasks)::int, v_now);
                    v_limited_ids := v_limited_ids || v_more;
                ELSIF v_room > 0 THEN
                    EXECUTE 'SELECT array_agg(c.task_id) FROM (' || c_candidates || ') c'
                       INTO v_more
                      USING v_now, ARRAY[v_limited.queue], _tf_claim_pick.task_types,
                            least(v_room, _tf_claim_pick.max_tasks), NULL::text[];
                    v_limited_ids := v_limited_ids || v_more;
                END IF;
                -- What is left of its room, for the keyed pick.
                v_held_queues := v_held_queues || v_limited.queue::text;
                v_held_room := v_held_room || greatest(0, v_room - coalesce(cardinality(v_more), 0))::int;
            END LOOP;
            PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
        END IF;
        -- Each unlimited, unpaused queue with priority aging: its own pick, in effective order.
        FOR v_limited IN
            SELECT q.queue, q.aging_per_second FROM taskforge.queues q
             WHERE q.aging_per_second IS NOT NULL AND q.max_running IS NULL AND q.paused_at IS NULL
               AND (_tf_claim_pick.queues IS NULL OR q.queue = ANY (_tf_claim_pick.queues))
             ORDER BY q.queue
        LOOP
            v_limited_ids := v_limited_ids || taskforge._tf_claim_aged(v_limited.queue, v_limited.aging_per_second,
                                                                     _tf_claim_pick.task_types, _tf_claim_pick.max_tasks, v_now);
        END LOOP;
    END IF;

    IF cardinality(v_queues) = 0 THEN
        -- Every queue of the filter is paused or limited: nothing for the main pick.
        v_ids := NULL;
    ELSIF v_latest > v_now OR cardinality(v_queues) > 1 OR v_excluded IS NOT NULL THEN
        -- Delayed tasks exist, several queues, or queues to step over: plan for this call
        -- (see Plans above).
        PERFORM set_config('enable_sort', 'on', true), set_config('enable_bitmapscan', 'on', true);
        EXECUTE 'SELECT array_agg(c.task_id) FROM (' || c_candidates || ') c'
           INTO v_ids
          USING v_now, v_queues, _tf_claim_pick.task_types, _tf_claim_pick.max_tasks, v_excluded;
        PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
    ELSIF v_queues IS NULL AND _tf_claim_pick.task_types IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_pick.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSIF v_queues IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.task_type = ANY (_tf_claim_pick.task_types)
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_pick.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSIF _tf_claim_pick.task_types IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.queue = v_queues[1]
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_pick.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSE
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.queue = v_queues[1]
               AND t.task_type = ANY (_tf_claim_pick.task_types)
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_pick.max_tasks FOR UPDATE OF t SKIP LOCKED);
    END IF;
    IF cardinality(v_limited_ids) > 0 THEN
        -- Candidates of limited and aged queues and of the main pick, merged in claim order
        -- (taskforge._tf_claim_order: effective priority with aging). Rows left out stay locked
        -- (skipped by others) until this transaction ends, and are not changed.
        v_ids := taskforge._tf_claim_order(v_ids || v_limited_ids, _tf_claim_pick.max_tasks, v_now);
    END IF;
    IF v_keyed_due <= v_now THEN
        -- Keyed tasks are due: the keyed pick, then as many plain picks as leave room.
        v_keyed := taskforge._tf_claim_keyed(_tf_claim_pick.worker_id, _tf_claim_pick.queues, _tf_claim_pick.task_types,
                                             _tf_claim_pick.max_tasks, v_now, coalesce(v_ids, '{}'),
                                             v_held_queues, v_held_room);
        IF cardinality(v_keyed) > 0 THEN
            v_ids := taskforge._tf_claim_order(
                v_keyed || taskforge._tf_claim_order(coalesce(v_ids, '{}'), _tf_claim_pick.max_tasks - cardinality(v_keyed), v_now),
                _tf_claim_pick.max_tasks, v_now);
        END IF;
    END IF;
    RETURN coalesce(v_ids, '{}');
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_pick(uuid, text[], double precision, int, text[], timestamptz, bigint[], int[]) IS
    'Private: the choice of a claim, shared by tf_claim and tf_finalize_and_claim (validation, worker check, SKIP LOCKED pick); returns the locked ids in claim order for taskforge._tf_turn.';
REVOKE ALL ON FUNCTION taskforge._tf_claim_pick(
    uuid, text[], double precision, int, text[], timestamptz, bigint[], int[]
) FROM PUBLIC;

-- >>> db/functions/_tf_cron_field.sql
-- taskforge._tf_cron_field(field text, expr text, min_value int, max_value int,
--     names text[] DEFAULT NULL) -> int[]                                 (private helper)
--
-- Purpose:    expand one field of a 5-field cron expression into the sorted set of values it
--             matches. Syntax (comma-separated list of items):
--               *        every value min_value..max_value
--               */n     every n-th value from min_value (step n: 1..max_value - min_value + 1)
--               a        one value
--               a-b      a through b (a <= b)
--               a-b/n    every n-th value from a through b
--             A value is a whole number, or, when names is given, a name (case-insensitive):
--             names[i] stands for min_value + i - 1 (JAN = 1 for months, SUN = 0 for weekdays).
--             Not supported, and refused: a/n without a range, the L, W, # and ? extensions.
-- Parameters: field      the field's name for messages: minute, hour, day-of-month, month,
--                        day-of-week.
--             expr       the field's text.
--             min_value, max_value  inclusive bounds of a value.
--             names      upper-case names of min_value, min_value + 1, ..., or NULL.
-- Returns:    int[], sorted, no duplicates, never empty.
-- Errors:     TF400 'cron: <field> field ''<expr>'': <problem>' (argument cron).
-- Locks:      none.  Clock: none.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_field(
    field text, expr text, min_value int, max_value int, names text[] DEFAULT NULL)
RETURNS int[]
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_where text := format('%s field %s: ', field, quote_literal(left(expr, 100)));
    v_item text;
    v_parts text[];
    v_bounds text[];
    v_step int;
    v_lo int;
    v_hi int;
    v_text text;
    v_value int;
    v_ends int[];
    v_values int[] := '{}';
BEGIN
    IF expr IS NULL OR expr = '' THEN
        PERFORM taskforge._tf_invalid('cron', v_where || 'is empty');
    END IF;
    FOREACH v_item IN ARRAY string_to_array(expr, ',') LOOP
        IF v_item = '' THEN
            PERFORM taskforge._tf_invalid('cron', v_where || 'has an empty list element');
        END IF;
        v_parts := string_to_array(v_item, '/');
        IF cardinality(v_parts) > 2 THEN
            PERFORM taskforge._tf_invalid('cron', v_where || format('%s has more than one /', quote_literal(v_item)));
        END IF;
        v_step := 1;
        IF cardinality(v_parts) = 2 THEN
            IF v_parts[2] !~ '^[0-9]{1,4}$' OR v_parts[2]::int NOT BETWEEN 1 AND max_value - min_value + 1 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('step must be a whole number from 1 to %s, got %s',
                    max_value - min_value + 1, quote_literal(v_parts[2])));
            END IF;
            v_step := v_parts[2]::int;
        END IF;

        IF v_parts[1] = '*' THEN
            v_lo := min_value;
            v_hi := max_value;
        ELSE
            v_bounds := string_to_array(v_parts[1], '-');
            IF cardinality(v_bounds) > 2 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('%s is not a range a-b', quote_literal(v_parts[1])));
            END IF;
            IF cardinality(v_bounds) = 1 AND cardinality(v_parts) = 2 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format(
                    'a step needs a range or *: write %s-%s/%s or */%s', v_parts[1], max_value, v_step, v_step));
            END IF;
            v_ends := '{}';
            FOREACH v_text IN ARRAY v_bounds LOOP
                IF v_text ~ '^[0-9]+$' THEN
                    IF length(v_text) > 4 OR v_text::int NOT BETWEEN min_value AND max_value THEN
                        PERFORM taskforge._tf_invalid('cron', v_where || format('%s is out of range %s-%s',
                            left(v_text, 20), min_value, max_value));
                    END IF;
                    v_value := v_text::int;
                ELSIF names IS NOT NULL AND upper(v_text) = ANY(names) THEN
                    v_value := min_value + array_position(names, upper(v_text)) - 1;
                ELSIF v_text = '' THEN
                    PERFORM taskforge._tf_invalid('cron', v_where || format('%s is missing a number', quote_literal(v_item)));
                ELSE
                    PERFORM taskforge._tf_invalid('cron', v_where || format('%s is not a number%s%s', quote_literal(left(v_text, 20)),
                        CASE WHEN names IS NOT NULL
                             THEN format(' or a name (%s..%s)', names[1], names[cardinality(names)]) ELSE '' END,
                        CASE WHEN v_text ~ '[LlWw#?]' THEN ' (the L, W, # and ? extensions are not supported)' ELSE '' END));
                END IF;
                v_ends := v_ends || v_value;
            END LOOP;
            v_lo := v_ends[1];
            v_hi := v_ends[cardinality(v_ends)];
            IF v_lo > v_hi THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('range %s starts after it ends', quote_literal(v_parts[1])));
            END IF;
        END IF;
        v_values := v_values || ARRAY(SELECT generate_series(v_lo, v_hi, v_step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM unnest(v_values) v ORDER BY v);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_field(text, text, int, int, text[]) IS
    'Private: expands one cron field (*, lists, ranges, steps, names) to its sorted values. Errors: TF400 cron: naming the field.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_field(text, text, int, int, text[]) FROM PUBLIC;

-- >>> db/functions/_tf_cron_fire_at.sql
-- taskforge._tf_cron_fire_at(local_time timestamp, timezone text) -> timestamptz
--                                                                     (private helper)
--
-- Purpose:    the instant at which a schedule whose cron matched the wall-clock time local_time
--             in timezone fires. Daylight saving time:
--               - a wall-clock time that happens once: that instant;
--               - a repeated wall-clock time (the clocks go back, e.g. 02:30 on the last Sunday
--                 of October in Europe/Berlin): its FIRST occurrence only, so the tick fires
--                 once (the callers skip it when that occurrence is already past);
--               - a wall-clock time that does not exist (the clocks go forward, e.g. 02:30 on
--                 the last Sunday of March in Europe/Berlin): the first instant after the gap,
--                 the moment the clocks jump (03:00 CEST there). Every tick inside one gap maps
--                 to that same instant, so they fire once together, as Vixie cron runs jobs of
--                 a skipped hour right after the change.
--             PostgreSQL's own reading of such times (timestamp AT TIME ZONE) picks the later
--             occurrence and shifts a gap time by the jump, so it is not used alone.
-- Parameters: local_time  a wall-clock time (timestamp without time zone).
--             timezone    a name from pg_timezone_names (checked by the callers).
-- Returns:    timestamptz.
-- Errors:     none of its own (an unknown zone is PostgreSQL's 22023).
-- Locks:      none.  Clock: none.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_fire_at(local_time timestamp, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    -- local_time read as if it were UTC; every real reading is this minus the zone's UTC offset.
    v_as_utc constant timestamptz := local_time AT TIME ZONE 'UTC';
    v_candidates timestamptz[];
    v_lo timestamptz;
    v_hi timestamptz;
    v_mid timestamptz;
BEGIN
    -- The zone's offsets a day before and a day after (zones change offset at most once within
    -- a day), applied to local_time: the readings that give local_time back are its occurrences.
    v_candidates := ARRAY(
        SELECT DISTINCT v_as_utc - ((p AT TIME ZONE _tf_cron_fire_at.timezone) - (p AT TIME ZONE 'UTC'))
          FROM unnest(ARRAY[v_as_utc - interval '1 day', v_as_utc + interval '1 day']) p
         ORDER BY 1);
    IF (v_candidates[1] AT TIME ZONE _tf_cron_fire_at.timezone) = local_time THEN
        RETURN v_candidates[1];
    END IF;
    IF (v_candidates[cardinality(v_candidates)] AT TIME ZONE _tf_cron_fire_at.timezone) = local_time THEN
        RETURN v_candidates[cardinality(v_candidates)];
    END IF;

    -- In a gap: the earlier reading is still before local_time on the wall clock, the later one
    -- already after it. The jump lies between them, on a whole second: bisect to it.
    v_lo := v_candidates[1];
    v_hi := v_candidates[cardinality(v_candidates)];
    WHILE v_hi - v_lo > interval '1 second' LOOP
        v_mid := to_timestamp(floor((extract(epoch FROM v_lo) + extract(epoch FROM v_hi)) / 2));
        IF (v_mid AT TIME ZONE _tf_cron_fire_at.timezone) > local_time THEN
            v_hi := v_mid;
        ELSE
            v_lo := v_mid;
        END IF;
    END LOOP;
    RETURN v_hi;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_fire_at(timestamp, text) IS
    'Private: fire instant of a matched wall-clock time in a zone (DST: first occurrence of a repeated time; the end of a gap for a skipped one).';
REVOKE ALL ON FUNCTION taskforge._tf_cron_fire_at(timestamp, text) FROM PUBLIC;

-- >>> db/functions/_tf_cron_latest.sql
-- taskforge._tf_cron_latest(cron text, due timestamptz, upto timestamptz, timezone text)
--   -> timestamptz                                                    (private helper)
--
-- Purpose:    the catch-up rule of tf_enqueue_periodic: given a tick `due` <= upto that has not
--             fired, the LATEST tick of the expression at or before `upto` (which is `due`
--             itself when no later tick has passed). Ticks missed in between are not returned:
--             a schedule that was not served for a while fires once, for its most recent tick.
--             Bisection over the missed span keeps this to a few dozen evaluations of
--             taskforge._tf_cron_next however long the span is (a year of a minutely schedule
--             included).
-- Parameters: cron      a 5-field expression.
--             due       a tick of the expression, <= upto.
--             upto      the current instant of the caller.
--             timezone  a name from pg_timezone_names.
-- Returns:    timestamptz t with due <= t <= upto, t a tick, and no tick in (t, upto].
-- Errors:     TF400 for an invalid expression.
-- Locks:      none.  Clock: none (it works from its arguments).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_latest(cron text, due timestamptz, upto timestamptz, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_lo timestamptz := due;   -- a tick <= upto
    v_hi timestamptz := upto;  -- no tick in (v_hi, upto]
    v_next timestamptz;
    v_mid timestamptz;
BEGIN
    LOOP
        v_next := taskforge._tf_cron_next(cron, v_lo, _tf_cron_latest.timezone);
        IF v_next > upto THEN
            RETURN v_lo;
        END IF;
        v_lo := v_next;
        -- Probe the middle of the span left: a tick after it moves v_lo there; none moves v_hi.
        v_mid := v_lo + (v_hi - v_lo) / 2;
        v_next := taskforge._tf_cron_next(cron, v_mid, _tf_cron_latest.timezone);
        IF v_next <= upto THEN
            v_lo := v_next;
        ELSE
            v_hi := v_mid;
        END IF;
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_latest(text, timestamptz, timestamptz, text) IS
    'Private: catch-up rule: the latest tick at or before upto, starting from an unfired tick due (bisection).';
REVOKE ALL ON FUNCTION taskforge._tf_cron_latest(text, timestamptz, timestamptz, text) FROM PUBLIC;

-- >>> db/functions/_tf_cron_next.sql
-- taskforge._tf_cron_next(cron text, after timestamptz, timezone text) -> timestamptz
--                                                                     (private helper)
--
-- Purpose:    the next tick of a cron expression strictly after the instant `after`, with the
--             expression read on the wall clock of `timezone`. It walks the wall clock forward
--             from the minute after `after` (a whole month, day, hour or minute at a time when
--             that field does not match) to the first matching minute whose fire instant
--             (taskforge._tf_cron_fire_at: DST gaps and repeats) is after `after`. Ticks are
--             whole minutes of wall-clock time; seconds of `after` are ignored.
-- Parameters: cron      a 5-field expression (taskforge._tf_cron_parse).
--             after     the instant the tick must follow (finite).
--             timezone  a name from pg_timezone_names (checked by the callers).
-- Returns:    timestamptz > after. Every valid expression fires within 8 years (a 29 February
--             may be that far), so the walk is bounded.
-- Errors:     TF400 'cron: ...' for an invalid expression (taskforge._tf_cron_parse).
-- Locks:      none.  Clock: none (it works from `after`).
-- By hand:    yes, to see when an expression fires:
--               SELECT taskforge._tf_cron_next('30 2 * * *', now(), 'Europe/Berlin');
CREATE OR REPLACE FUNCTION taskforge._tf_cron_next(cron text, after timestamptz, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c record;
    v_t timestamp := date_trunc('minute', after AT TIME ZONE _tf_cron_next.timezone) + interval '1 minute';
    v_limit constant timestamp := v_t + interval '9 years';
    v_field int;
    v_next int;
    v_fire timestamptz;
    v_day_ok boolean;
    v_weekday_ok boolean;
BEGIN
    c := taskforge._tf_cron_parse(cron);
    WHILE v_t < v_limit LOOP
        v_field := extract(month FROM v_t)::int;
        IF NOT v_field = ANY(c.months) THEN
            v_next := (SELECT min(m) FROM unnest(c.months) m WHERE m > v_field);
            v_t := CASE WHEN v_next IS NULL THEN make_timestamp(extract(year FROM v_t)::int + 1, c.months[1], 1, 0, 0, 0)
                        ELSE make_timestamp(extract(year FROM v_t)::int, v_next, 1, 0, 0, 0) END;
            CONTINUE;
        END IF;
        v_day_ok := extract(day FROM v_t)::int = ANY(c.days);
        v_weekday_ok := extract(dow FROM v_t)::int = ANY(c.weekdays);
        IF NOT (CASE WHEN c.day_or THEN v_day_ok OR v_weekday_ok ELSE v_day_ok AND v_weekday_ok END) THEN
            v_t := date_trunc('day', v_t) + interval '1 day';
            CONTINUE;
        END IF;
        v_field := extract(hour FROM v_t)::int;
        IF NOT v_field = ANY(c.hours) THEN
            v_next := (SELECT min(h) FROM unnest(c.hours) h WHERE h > v_field);
            v_t := CASE WHEN v_next IS NULL THEN date_trunc('day', v_t) + interval '1 day'
                        ELSE date_trunc('day', v_t) + make_interval(hours => v_next) END;
            CONTINUE;
        END IF;
        v_field := extract(minute FROM v_t)::int;
        IF NOT v_field = ANY(c.minutes) THEN
            v_next := (SELECT min(m) FROM unnest(c.minutes) m WHERE m > v_field);
            v_t := CASE WHEN v_next IS NULL THEN date_trunc('hour', v_t) + interval '1 hour'
                        ELSE date_trunc('hour', v_t) + make_interval(mins => v_next) END;
            CONTINUE;
        END IF;
        -- v_t matches. Its fire instant can be at or before `after` only around DST: a repeated
        -- wall-clock time whose first occurrence is past, or a gap time mapped to a jump already
        -- past. Then the walk goes on.
        v_fire := taskforge._tf_cron_fire_at(v_t, _tf_cron_next.timezone);
        IF v_fire > after THEN
            RETURN v_fire;
        END IF;
        v_t := v_t + interval '1 minute';
    END LOOP;
    PERFORM taskforge._tf_broken_invariant(format('cron %s found no tick within 9 years after %s',
        quote_literal(cron), after));
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_next(text, timestamptz, text) IS
    'Private: next tick of a 5-field cron expression strictly after an instant, on the wall clock of a time zone (DST handled by _tf_cron_fire_at). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_next(text, timestamptz, text) FROM PUBLIC;

-- >>> db/functions/_tf_cron_parse.sql
-- taskforge._tf_cron_parse(cron text)
--   -> (minutes int[], hours int[], days int[], months int[], weekdays int[], day_or boolean)
--                                                                     (private helper)
--
-- Purpose:    parse a standard 5-field cron expression, "minute hour day-of-month month
--             day-of-week", fields separated by spaces or tabs:
--               minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC,
--               day-of-week 0-7 or SUN-SAT (0 and 7 are both Sunday).
--             Each field is *, a list, ranges and steps (see _tf_cron_field). The macros
--             @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly stand for
--             0 0 1 1 *, 0 0 1 * *, 0 0 * * 0, 0 0 * * * and 0 * * * *.
--             Day rule (Vixie cron): when neither the day-of-month nor the day-of-week field
--             starts with *, a day matches when EITHER matches ("0 0 1 * MON" fires on the 1st
--             and on every Monday); otherwise it must match both (a field starting with *,
--             such as * or */2, restricts together with the other field).
-- Parameters: cron  the expression, at most 200 characters.
-- Returns:    the sorted values of each field (weekdays 0-6, Sunday 0), and day_or: whether
--             the either-matches rule applies.
-- Errors:     TF400 'cron: <problem>': NULL, too long, not 5 fields, an unknown macro, a bad
--             field (the message names it), or an expression that never fires (a
--             day-of-month that no month of the month field has, such as 30 2).
-- Locks:      none.  Clock: none.
-- By hand:    harmless; it shows how an expression is read.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_parse(
    cron text,
    OUT minutes int[],
    OUT hours int[],
    OUT days int[],
    OUT months int[],
    OUT weekdays int[],
    OUT day_or boolean)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_text text;
    v_fields text[];
BEGIN
    IF cron IS NULL THEN
        PERFORM taskforge._tf_invalid('cron', 'must not be NULL');
    END IF;
    IF length(cron) > 200 THEN
        PERFORM taskforge._tf_invalid('cron', format('must be at most 200 characters, got %s', length(cron)));
    END IF;
    v_text := btrim(cron, E' \t\n\r');
    IF left(v_text, 1) = '@' THEN
        v_text := CASE lower(v_text)
            WHEN '@yearly' THEN '0 0 1 1 *'
            WHEN '@annually' THEN '0 0 1 1 *'
            WHEN '@monthly' THEN '0 0 1 * *'
            WHEN '@weekly' THEN '0 0 * * 0'
            WHEN '@daily' THEN '0 0 * * *'
            WHEN '@midnight' THEN '0 0 * * *'
            WHEN '@hourly' THEN '0 * * * *'
        END;
        IF v_text IS NULL THEN
            PERFORM taskforge._tf_invalid('cron', format(
                'unknown macro %s (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)',
                quote_literal(left(btrim(cron), 40))));
        END IF;
    END IF;
    v_fields := CASE WHEN v_text = '' THEN '{}'::text[] ELSE regexp_split_to_array(v_text, E'[ \t\n\r]+') END;
    IF cardinality(v_fields) <> 5 THEN
        PERFORM taskforge._tf_invalid('cron', format(
            'must have 5 fields (minute hour day-of-month month day-of-week), got %s', cardinality(v_fields)));
    END IF;

    minutes := taskforge._tf_cron_field('minute', v_fields[1], 0, 59);
    hours := taskforge._tf_cron_field('hour', v_fields[2], 0, 23);
    days := taskforge._tf_cron_field('day-of-month', v_fields[3], 1, 31);
    months := taskforge._tf_cron_field('month', v_fields[4], 1, 12,
        ARRAY['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']);
    weekdays := taskforge._tf_cron_field('day-of-week', v_fields[5], 0, 7,
        ARRAY['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']);
    weekdays := ARRAY(SELECT DISTINCT w % 7 FROM unnest(weekdays) w ORDER BY 1);
    day_or := left(v_fields[3], 1) <> '*' AND left(v_fields[5], 1) <> '*';

    -- Both day fields must hold: some listed month must have one of the listed days (every such
    -- date falls on every weekday in some year). With the either-matches rule any weekday will do.
    IF NOT day_or AND NOT EXISTS (
        SELECT 1 FROM unnest(months) m, unnest(days) d
         WHERE d <= CASE WHEN m = 2 THEN 29 WHEN m IN (4, 6, 9, 11) THEN 30 ELSE 31 END) THEN
        PERFORM taskforge._tf_invalid('cron', format(
            'the expression never fires: no month of the month field %s has a day of the day-of-month field %s',
            quote_literal(v_fields[4]), quote_literal(v_fields[3])));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_parse(text) IS
    'Private: parses a 5-field cron expression (Vixie day rule, JAN-DEC, SUN-SAT, 0 and 7 = Sunday, @daily...). Errors: TF400 cron: naming the field.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_parse(text) FROM PUBLIC;

-- >>> db/functions/_tf_drop_partitions.sql
-- taskforge._tf_drop_partitions(cutoff timestamptz) -> int              (private helper)
--
-- Purpose:    tf_prune on the partitioned history (tf_partition_history): drop the oldest task-id
--             range (taskforge.tasks_p<N> with its twin attempts_p<N>) that
--             - lies wholly below the next task id (every id in it drawn; a submit that drew one
--               holds a lock on tasks until it commits, which the drop's lock waits for),
--             - holds only terminal tasks (SUCCEEDED, FAILED, CANCELLED) finished before cutoff,
--             - and holds no parent (depends_on) of a task that is not terminal, in any range;
--             with the idempotency keys of its tasks and the dependency edges naming them. One
--             range a call: call again while the count is at least your batch (the scheduler and
--             tf_maintain do). A range that fails a test stays whole (one long-running or
--             far-scheduled task keeps its range: nothing is lost, the drop waits); later ranges
--             are still looked at.
--             Each range is tested first through indexes only, without waiting for a lock (a
--             probe of each partial index of the live states, of the range's dependency edges
--             for BLOCKED tasks, and of the newest finish), so a range that must stay costs a
--             few index reads however many tasks it holds; then exactly, reading each of its
--             rows, under ACCESS EXCLUSIVE on tasks and attempts, so a submit, tf_retry or
--             finalize that committed before the lock is seen and one after it finds the range
--             gone (tf_retry: TF404, as after a row-wise prune).
-- Parameters: cutoff  tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks dropped (0: no range could go, or another caller is dropping).
-- Errors:     none of its own: when the lock is not granted within lock_timeout (1 s), or a
--             deadlock with a reader that locked attempts before tasks (the views) ends the
--             wait, the range is left, with a WARNING, for the next call.
-- Locks:      history_layout's row (FOR UPDATE SKIP LOCKED: one caller at a time); ACCESS
--             SHARE on the partitions probed; ACCESS EXCLUSIVE on taskforge.tasks and
--             taskforge.attempts from the exact test of a range that passed the probes to the
--             caller's commit: claims, submits and console reads wait for one sequential scan of
--             that range's tasks and the drop. The first range after a conversion holds the whole
--             history from before it: prune row-wise before converting (docs/operations.md,
--             "Partitioned history").
-- Clock:      none (the caller's cutoff).
-- By hand:    no: call tf_prune.
CREATE OR REPLACE FUNCTION taskforge._tf_drop_partitions(cutoff timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 1000
AS $fn$
DECLARE
    v_next bigint;
    v_tasks bigint;
    v_blocking bigint;
    v_newest timestamptz;
    v_live boolean;
    v_first bigint;
    v_end bigint;
    v_table text;
    r record;
BEGIN
    -- One caller at a time (a second one returns at once: the first drops what there is), so
    -- no two callers lock the same range's partitions in opposite orders, and the list of
    -- ranges read next is not changed under it by another caller.
    PERFORM 1 FROM taskforge.history_layout l FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END INTO v_next
      FROM taskforge.tasks_task_id_seq s;
    FOR r IN SELECT p.partition_no, p.first_task_id, p.end_task_id FROM taskforge.history_partitions p
              WHERE p.end_task_id <= v_next ORDER BY p.end_task_id LOOP
        v_first := coalesce(r.first_task_id, -9223372036854775808);
        v_end := r.end_task_id;
        v_table := format('taskforge.%I', 'tasks_p' || r.partition_no);

        -- The first test reads only indexes, without waiting for a lock (ACCESS SHARE on the
        -- partition), so a range that must stay costs little whatever its size: a live task in
        -- one of the partial indexes of the live states (a BLOCKED one through the range's
        -- dependency edges), or a finish after the cutoff (the newest entry of
        -- tasks_finished_idx).
        EXECUTE format(
            'SELECT EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''QUEUED'' AND NOT t.keyed)'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''QUEUED'' AND t.keyed)'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''RUNNING'')'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''RETRYING'')'
            ' OR EXISTS (SELECT 1 FROM taskforge.task_dependencies d JOIN %1$s t ON t.task_id = d.child_task_id'
            '             WHERE d.child_task_id >= $1 AND d.child_task_id < $2 AND t.state = ''BLOCKED''),'
            ' (SELECT max(t.finished_at) FROM %1$s t WHERE t.finished_at IS NOT NULL)', v_table)
          INTO v_live, v_newest USING v_first, v_end;
        CONTINUE WHEN v_live OR v_newest >= _tf_drop_partitions.cutoff;

        -- Then, under ACCESS EXCLUSIVE on both parents (so a submit, tf_retry or finalize that
        -- committed before it is seen, and one after it finds the range gone), the exact test:
        -- every row of the range read once.
        BEGIN
            LOCK TABLE taskforge.tasks, taskforge.attempts IN ACCESS EXCLUSIVE MODE;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'taskforge: tf_prune: tasks and attempts stayed locked for lock_timeout (or a '
                'deadlock with a reader); range % (tasks_p%) is left for the next call',
                r.partition_no, r.partition_no;
            RETURN 0;
        END;
        EXECUTE format('SELECT count(*), count(*) FILTER (WHERE t.state NOT IN (''SUCCEEDED'', ''FAILED'', ''CANCELLED'') '
                       'OR NOT t.finished_at < $1) FROM %s t', v_table)
          INTO v_tasks, v_blocking USING _tf_drop_partitions.cutoff;
        CONTINUE WHEN v_blocking > 0;
        -- A parent of a task that has not ended stays (its child's handler reads its result).
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM taskforge.task_dependencies d JOIN taskforge.tasks c ON c.task_id = d.child_task_id
             WHERE d.parent_task_id >= v_first AND d.parent_task_id < v_end AND c.finished_at IS NULL);

        EXECUTE format('DELETE FROM taskforge.idempotency_keys k USING %s t '
                       'WHERE t.idempotency_key IS NOT NULL AND k.idempotency_key = t.idempotency_key', v_table);
        DELETE FROM taskforge.task_dependencies d
         WHERE (d.child_task_id >= v_first AND d.child_task_id < v_end)
            OR (d.parent_task_id >= v_first AND d.parent_task_id < v_end);
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_prune'
           AND CASE WHEN e.sweep = 'tf_prune' THEN e.subject::bigint END >= v_first
           AND CASE WHEN e.sweep = 'tf_prune' THEN e.subject::bigint END < v_end;
        EXECUTE format('DROP TABLE taskforge.%I', 'attempts_p' || r.partition_no);
        EXECUTE format('DROP TABLE %s', v_table);
        DELETE FROM taskforge.history_partitions p WHERE p.partition_no = r.partition_no;
        -- One range a call: the lock ends with the caller's transaction, so a caller that
        -- calls again while the count is at least its batch (the scheduler, tf_maintain)
        -- pauses the workers once per range, not for all of them at once.
        RETURN least(v_tasks, 2147483647);
    END LOOP;
    RETURN 0;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_drop_partitions(timestamptz) IS
    'Private: tf_prune on the partitioned history: drop the oldest task-id range below the next id whose tasks all ended before cutoff and parent no live task, with its keys and edges (one range a call); returns its tasks.';
REVOKE ALL ON FUNCTION taskforge._tf_drop_partitions(timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_enqueue_tick.sql
-- taskforge._tf_enqueue_tick(name text, now timestamptz)
--   -> TABLE(tick timestamptz, task_id bigint, queue text, created boolean)  (private helper)
--
-- Purpose:    tf_enqueue_periodic's work for one due schedule the caller has locked (FOR
--             UPDATE): the tick to enqueue is the latest tick <= now (taskforge._tf_cron_latest);
--             one task is submitted through tf_submit's rules (taskforge._tf_submit_one) with
--             scheduled_at = the tick and the idempotency key
--             'periodic:<name>:<tick in UTC, YYYY-MM-DDTHH:MI:SSZ>'; last_fire_at, last_task_id
--             and next_fire_at (the first tick after now) are written.
--             A key already held by a different request (TF409: a task submitted by hand with a
--             'periodic:' key) counts as that tick's task: a WARNING is raised, the holder's id
--             is returned (created = false) and the schedule moves on.
-- Parameters: name  the schedule (locked by the caller).
--             now   tf_enqueue_periodic's clock.
-- Returns:    one row (tick, task_id, queue, created), or none when the schedule was deleted or
--             is no longer due (advanced by another caller before the lock).
-- Errors:     whatever the submit or the update raises besides TF409 (a request tf_submit
--             refuses now, a CHECK, a trigger): nothing is written then.
-- Locks:      the schedule's row (already the caller's); inserts tasks.
-- Clock:      the caller's now.
-- By hand:    no: call tf_enqueue_periodic, which locks the due rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_enqueue_tick(name text, now timestamptz)
RETURNS TABLE(tick timestamptz, task_id bigint, queue text, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_enqueue_tick.now;
    s taskforge.periodic_schedules%ROWTYPE;
    v_tick timestamptz;
    v_key text;
    v_task_id bigint;
    v_created boolean;
    v_message text;
BEGIN
    SELECT * INTO s FROM taskforge.periodic_schedules p WHERE p.name = _tf_enqueue_tick.name;
    IF NOT FOUND OR s.next_fire_at > v_now THEN
        RETURN;  -- deleted or advanced by another caller before our lock (locked rows are re-read)
    END IF;
    v_tick := taskforge._tf_cron_latest(s.cron, s.next_fire_at, v_now, s.timezone);
    v_key := 'periodic:' || s.name || ':' || to_char(v_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
    BEGIN
        SELECT r.task_id, r.created INTO v_task_id, v_created
          FROM taskforge._tf_submit_one(s.task_type, s.payload, s.queue, s.priority, s.max_attempts,
                                        v_tick, v_key, v_now, '') r;
    EXCEPTION WHEN SQLSTATE 'TF409' THEN
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT;
        SELECT k.task_id INTO v_task_id FROM taskforge.idempotency_keys k WHERE k.idempotency_key = v_key;
        v_created := false;
        RAISE WARNING 'taskforge: periodic schedule % tick %: % (counted as this tick''s task)',
            quote_literal(s.name), v_tick, v_message;
    END;

    UPDATE taskforge.periodic_schedules p
       SET last_fire_at = v_tick, last_task_id = v_task_id,
           next_fire_at = taskforge._tf_cron_next(s.cron, v_now, s.timezone), updated_at = v_now
     WHERE p.name = s.name;
    RETURN QUERY SELECT v_tick, v_task_id, s.queue::text, v_created;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_enqueue_tick(text, timestamptz) IS
    'Private: enqueue the latest due tick of one locked periodic schedule (key periodic:<name>:<tick>; TF409 counts the holder) and advance next_fire_at. Returns tick, task_id, queue, created; no row if not due.';
REVOKE ALL ON FUNCTION taskforge._tf_enqueue_tick(text, timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_fingerprint.sql
-- taskforge._tf_fingerprint(task_type text, payload jsonb, queue text, priority int,
--                           max_attempts int, scheduled_at timestamptz,
--                           timeout_seconds double precision DEFAULT NULL,
--                           delay_seconds double precision DEFAULT NULL,
--                           flow jsonb DEFAULT NULL) -> bytea
--                                                                        (private helper)
--
-- Purpose:    the idempotency fingerprint of a submit request: SHA-256 over a canonical form.
--             Canonical form: the jsonb array
--               ["tf1", task_type, payload, queue, priority, max_attempts, scheduled_at_utc]
--             printed by jsonb's own output function, which sorts object keys and drops
--             insignificant white space, so key order and formatting of the payload do not
--             matter while any difference in a value does. scheduled_at is written as
--             'YYYY-MM-DD"T"HH24:MI:SS.US"Z" AD' (or BC) in UTC, so the session TimeZone never
--             changes the fingerprint and years before 1 AD stay distinct; a NULL schedule stays
--             JSON null (it does not become "now"). A per-task timeout_seconds, when given, is
--             appended as an eighth element (a JSON number); without one the array, and so every
--             fingerprint computed before that parameter existed, is unchanged. A delay_seconds,
--             when given, is appended as a ninth element (the eighth is then the timeout or JSON
--             null): the delay as the caller gave it, not the instant it yields, so a replay of
--             a delayed submit later has the same fingerprint. A request with a delay has a NULL
--             scheduled_at (tf_submit refuses both), and 9 elements never equal 7 or 8.
--             flow, when not NULL, is appended last as a JSON object (never a number or null,
--             so it cannot be mistaken for the elements before it): the request's dependencies
--             and flow-control keys, {"depends_on": [parent ids, sorted, distinct],
--             "rate_key": ..., "concurrency_key": ..., "ordering_key": ...} with only the keys
--             given (built by taskforge._tf_submit_one); a request with none is unchanged.
-- Returns:    32 bytes.
-- Errors:     none (callers validate first).  Locks: none.
-- Clock:      none; the result depends on its arguments only (IMMUTABLE).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_fingerprint(
    task_type text, payload jsonb, queue text, priority int, max_attempts int, scheduled_at timestamptz,
    timeout_seconds double precision DEFAULT NULL, delay_seconds double precision DEFAULT NULL,
    flow jsonb DEFAULT NULL)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN sha256(convert_to(
        (jsonb_build_array(
            'tf1', task_type, payload, queue, priority, max_attempts,
            to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z" BC')
        ) || CASE WHEN delay_seconds IS NOT NULL THEN jsonb_build_array(timeout_seconds, delay_seconds)
                  WHEN timeout_seconds IS NOT NULL THEN jsonb_build_array(timeout_seconds)
                  ELSE '[]'::jsonb END
          || CASE WHEN flow IS NOT NULL THEN jsonb_build_array(flow) ELSE '[]'::jsonb END)::text,
        'UTF8'));
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_fingerprint(text, jsonb, text, int, int, timestamptz, double precision, double precision, jsonb) IS
    'Private: SHA-256 of the canonical submit request (key order free, schedule in UTC, NULL schedule kept NULL, a delay as given, dependencies and flow keys when given).';
REVOKE ALL ON FUNCTION taskforge._tf_fingerprint(
    text, jsonb, text, int, int, timestamptz, double precision, double precision, jsonb
) FROM PUBLIC;

-- >>> db/functions/_tf_guard.sql
-- taskforge._tf_guard(state text, attempt_count int, owner_worker_id uuid, deadline_at timestamptz,
--     lease_expires_at timestamptz, worker_id uuid, attempt_number int, at timestamptz)
--   -> text                                                                    (private helper)
--
-- Purpose:    the ownership guard shared by tf_renew, tf_finalize and their batch forms. A call
--             may act on a task only while the task is RUNNING, under the same attempt, owned
--             by the same worker, with its deadline not passed and its lease not yet expired at
--             time "at".
-- Parameters: state, attempt_count, owner_worker_id, deadline_at, lease_expires_at
--                   the task's columns, from its row as locked by the caller (columns, not the
--                   row: a whole-row value would be built, payload included, for every element
--                   of a batch);
--             worker_id, attempt_number  the caller's fencing token; "at", the database time of
--             the call.
-- Returns:    NULL when the guard holds, else the first reason it fails, checked in this order:
--             'not_running' | 'stale_attempt' | 'not_owner' | 'timed_out' (the attempt's
--             deadline has passed: no lease reaches past it) | 'lease_expired'.
-- Errors:     none.  Locks: none (callers lock the row first).  Clock: the "at" argument.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard(
    state text, attempt_count int, owner_worker_id uuid, deadline_at timestamptz,
    lease_expires_at timestamptz, worker_id uuid, attempt_number int, at timestamptz)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned.
AS $fn$
    SELECT CASE
        WHEN state IS DISTINCT FROM 'RUNNING' THEN 'not_running'
        WHEN attempt_count IS DISTINCT FROM attempt_number THEN 'stale_attempt'
        WHEN owner_worker_id IS DISTINCT FROM worker_id THEN 'not_owner'
        WHEN deadline_at <= at THEN 'timed_out'
        WHEN lease_expires_at IS NULL OR lease_expires_at <= at THEN 'lease_expired'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard(text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz) IS
    'Private: ownership guard of renew/finalize; NULL when it holds, else not_running | stale_attempt | not_owner | timed_out | lease_expired.';
REVOKE ALL ON FUNCTION taskforge._tf_guard(
    text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz
) FROM PUBLIC;

-- >>> db/functions/_tf_guard_batch.sql
-- taskforge._tf_guard_batch(locked boolean, found boolean, state text, attempt_count int,
--     owner_worker_id uuid, deadline_at timestamptz, lease_expires_at timestamptz,
--     worker_id uuid, attempt_number int, at timestamptz) -> text          (private helper)
--
-- Purpose:    why a batch call (taskforge._tf_turn, _tf_renew_attempts) may not act on one
--             element: its row is held by another transaction (the batch locks with SKIP
--             LOCKED and never waits), the task does not exist, or the ownership guard
--             (taskforge._tf_guard) fails.
-- Parameters: locked    this call locked the element's row (its columns below are then read);
--             found     the task exists: read only for an element that was not locked, so a
--                       caller passes the lookup itself (EXISTS (...)) and it runs only then;
--             the rest  as taskforge._tf_guard.
-- Returns:    NULL when the element may be acted on, else 'busy' | 'not_found' | a reason of
--             taskforge._tf_guard.
-- Errors:     none.  Locks: none.  Clock: the "at" argument.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard_batch(
    locked boolean, found boolean, state text, attempt_count int, owner_worker_id uuid,
    deadline_at timestamptz, lease_expires_at timestamptz, worker_id uuid, attempt_number int,
    at timestamptz)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause, so that it is inlined into the batch statements (see taskforge._tf_guard).
AS $fn$
    SELECT CASE
        WHEN NOT locked THEN CASE WHEN found THEN 'busy' ELSE 'not_found' END
        ELSE taskforge._tf_guard(state, attempt_count, owner_worker_id, deadline_at, lease_expires_at,
                                 worker_id, attempt_number, at)
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard_batch(boolean, boolean, text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz) IS
    'Private: busy (locked elsewhere) | not_found | the guard''s reason for one element of a batch renew or finalize; NULL when it may act.';
REVOKE ALL ON FUNCTION taskforge._tf_guard_batch(
    boolean, boolean, text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz
) FROM PUBLIC;

-- >>> db/functions/_tf_invalid.sql
-- taskforge._tf_invalid(argument text, problem text) -> void       (private helper)
--
-- Purpose:    raise the invalid-argument error every public function uses, so any client can
--             branch on one SQLSTATE and read which argument was wrong.
-- Parameters: argument  the parameter name as callers pass it with =>, e.g. 'priority'.
--             problem   what is wrong, e.g. 'must be between -32768 and 32767, got 40000'.
-- Returns:    never; always raises.
-- Errors:     TF400 with MESSAGE '<argument>: <problem>' and COLUMN = argument.
-- Locks:      none.  Clock: none.
-- By hand:    harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_invalid(argument text, problem text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call with constant arguments
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'TF400',
        MESSAGE = argument || ': ' || problem,
        COLUMN  = argument;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_invalid(text, text) IS
    'Private: raises TF400 "<argument>: <problem>". Used by every tf_* validator.';
REVOKE ALL ON FUNCTION taskforge._tf_invalid(text, text) FROM PUBLIC;

-- >>> db/functions/_tf_json_too_deep.sql
-- taskforge._tf_json_too_deep(value jsonb) -> boolean                  (private helper)
--
-- Purpose:    the one home of the JSON nesting limit: is value nested more than 100 levels
--             deep (objects and arrays; value itself is level 1, so {"a": [1]} is 2 deep)?
--             Clients decode JSON recursively (Python's json stops near 1,000 levels, and a
--             handler or page that walks the value needs stack of its own), so what TaskForge
--             stores and hands out stays well inside that: task payloads (tf_submit refuses
--             deeper ones), attempt results (tf_finalize and the batch forms refuse them) and
--             errors (taskforge._tf_cap_error flattens them to text).
--             jsonpath's .**{100} walks at most 100 levels down (no deeper recursion) and
--             costs well under a microsecond for small values; strict mode, because lax would
--             unwrap arrays in the filter. Callers' messages say "at most 100 levels deep";
--             db/tests/_tf_json_too_deep pins 100 accepted and 101 refused for each of them.
-- Parameters: value  any jsonb.
-- Returns:    true when too deep; false otherwise; NULL for NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling expression (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_json_too_deep(value jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only a built-in function, schema-qualified, and
-- every caller is a taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT pg_catalog.jsonb_path_exists(value, 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")')
$fn$;

COMMENT ON FUNCTION taskforge._tf_json_too_deep(jsonb) IS
    'Private: true when a JSON value is nested more than 100 levels deep (the limit for payloads, results and errors).';
REVOKE ALL ON FUNCTION taskforge._tf_json_too_deep(jsonb) FROM PUBLIC;

-- >>> db/functions/_tf_lock_queue.sql
-- taskforge._tf_lock_queue(queue text) -> taskforge.queues   (private helper)
--
-- Purpose:    the queue-control row of one queue, created when missing and locked, for
--             tf_pause_queue, tf_resume_queue and tf_set_queue_limit.
-- Parameters: queue  a queue name (taskforge._tf_name_pattern('queue'), the rule tf_submit applies).
-- Returns:    the taskforge.queues row, locked FOR UPDATE until the caller's transaction ends.
-- Errors:     TF400 queue NULL or malformed (nothing written).
-- Locks:      inserts the row if missing; the row FOR UPDATE (claimers of a limited queue take
--             the same lock with SKIP LOCKED, so they skip the queue while it is being changed).
-- Clock:      created_at and updated_at default to clock_timestamp().
-- By hand:    harmless (an empty row changes nothing).
CREATE OR REPLACE FUNCTION taskforge._tf_lock_queue(queue text)
RETURNS taskforge.queues
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_row taskforge.queues%ROWTYPE;
BEGIN
    PERFORM taskforge._tf_check_name('queue', _tf_lock_queue.queue, 'queue');
    INSERT INTO taskforge.queues AS q (queue) VALUES (_tf_lock_queue.queue) ON CONFLICT (queue) DO NOTHING;
    SELECT * INTO STRICT v_row FROM taskforge.queues q WHERE q.queue = _tf_lock_queue.queue FOR UPDATE;
    RETURN v_row;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_lock_queue(text) IS
    'Private: validates a queue name (TF400) and returns its taskforge.queues row, created if missing, locked FOR UPDATE.';
REVOKE ALL ON FUNCTION taskforge._tf_lock_queue(text) FROM PUBLIC;

-- >>> db/functions/_tf_lock_task.sql
-- taskforge._tf_lock_task(task_id bigint) -> taskforge.tasks          (private helper)
--
-- Purpose:    lock one task row for the rest of the caller's transaction and return it; the
--             first step of tf_renew, tf_finalize, tf_cancel and tf_retry, which all decide
--             on the row's current version and must serialise with each other and with
--             tf_recover on the same task.
-- Parameters: task_id  not NULL (callers validate first).
-- Returns:    the locked tasks row.
-- Errors:     TF404 'task_id: no task <id>'.
-- Locks:      SELECT ... FOR UPDATE on that row (waits for a concurrent holder; the Python
--             worker bounds the wait with lock_timeout).
-- Clock:      none.  By hand: only inside a transaction you end quickly.
CREATE OR REPLACE FUNCTION taskforge._tf_lock_task(task_id bigint)
RETURNS taskforge.tasks
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task taskforge.tasks%ROWTYPE;
BEGIN
    SELECT * INTO v_task FROM taskforge.tasks t WHERE t.task_id = _tf_lock_task.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404',
            MESSAGE = format('task_id: no task %s', _tf_lock_task.task_id), COLUMN = 'task_id';
    END IF;
    RETURN v_task;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_lock_task(bigint) IS
    'Private: SELECT ... FOR UPDATE of one task, returned as a row; TF404 when there is none.';
REVOKE ALL ON FUNCTION taskforge._tf_lock_task(bigint) FROM PUBLIC;

-- >>> db/functions/_tf_maintenance_failed.sql
-- taskforge._tf_maintenance_failed(sweep text, subject text, sqlstate text, message text,
--                                  now timestamptz) -> timestamptz            (private helper)
--
-- Purpose:    record that a maintenance sweep could not process one row (its row-by-row fallback
--             caught the error in the row's own subtransaction), in taskforge.maintenance_errors
--             (read through tf_maintenance_errors): a first failure inserts the entry, a later one
--             updates the error, counts it and moves last_seen_at. The sweep leaves the row out
--             until retry_after = now + 60 s x 2^(failures - 1), at most 1 hour (60 s, 2 min,
--             4 min, ... 1 h): a row that keeps failing costs one subtransaction per retry, not
--             a failed set-based statement and a fallback on every pass.
--             A new error (no entry yet, or another SQLSTATE or message than the recorded one)
--             raises a WARNING (SQLSTATE 01000), which the scheduler logs: once per new error,
--             not on every failure.
-- Parameters: sweep    'tf_recover', 'tf_promote', 'tf_enqueue_periodic' or 'tf_prune'.
--             subject  the row: a task id in decimal, or the schedule name (tf_enqueue_periodic).
--             sqlstate, message  the caught error (message capped at 1000 characters).
--             now      the sweep's clock (clock_timestamp() read once at its entry).
-- Returns:    retry_after.
-- Errors:     23514 from the table's CHECKs for a sweep or subject outside the above (a caller bug).
-- Locks:      the entry's row (upsert on the primary key).
-- Clock:      the caller's now.
-- By hand:    it makes the sweep skip the row until retry_after; delete the entry to undo.
CREATE OR REPLACE FUNCTION taskforge._tf_maintenance_failed(
    sweep text, subject text, sqlstate text, message text, now timestamptz
)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_message text := left(coalesce(_tf_maintenance_failed.message, ''), 1000);
    v_old taskforge.maintenance_errors%ROWTYPE;
    v_failures int;
    v_retry_after timestamptz;
BEGIN
    SELECT * INTO v_old FROM taskforge.maintenance_errors e
     WHERE e.sweep = _tf_maintenance_failed.sweep AND e.subject = _tf_maintenance_failed.subject
       FOR UPDATE;
    v_failures := coalesce(v_old.failures, 0) + 1;
    v_retry_after := _tf_maintenance_failed.now
        + make_interval(secs => least(3600, 60 * power(2, least(v_failures, 7) - 1)));

    INSERT INTO taskforge.maintenance_errors AS e
           (sweep, subject, sqlstate, message, failures, first_seen_at, last_seen_at, retry_after)
    VALUES (_tf_maintenance_failed.sweep, _tf_maintenance_failed.subject, _tf_maintenance_failed.sqlstate,
            v_message, 1, _tf_maintenance_failed.now, _tf_maintenance_failed.now, v_retry_after)
    ON CONFLICT (sweep, subject) DO UPDATE
       SET sqlstate = excluded.sqlstate, message = excluded.message, failures = e.failures + 1,
           last_seen_at = greatest(e.last_seen_at, excluded.last_seen_at),
           retry_after = greatest(e.retry_after, excluded.retry_after)
    RETURNING e.retry_after INTO v_retry_after;

    IF v_old.sweep IS NULL OR v_old.sqlstate IS DISTINCT FROM _tf_maintenance_failed.sqlstate
       OR v_old.message IS DISTINCT FROM v_message THEN
        RAISE WARNING USING
            MESSAGE = format('taskforge: %s skipped %s: %s (SQLSTATE %s)', _tf_maintenance_failed.sweep,
                             CASE WHEN _tf_maintenance_failed.sweep = 'tf_enqueue_periodic'
                                  THEN 'periodic schedule ' || quote_literal(_tf_maintenance_failed.subject)
                                  ELSE 'task ' || _tf_maintenance_failed.subject END,
                             v_message, _tf_maintenance_failed.sqlstate),
            DETAIL = format('The other rows were processed. The row is retried after %s; until then it is listed '
                            'in taskforge.tf_maintenance_errors.', v_retry_after);
    END IF;
    RETURN v_retry_after;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_maintenance_failed(text, text, text, text, timestamptz) IS
    'Private: record a row a maintenance sweep could not process in maintenance_errors (retry after 60 s doubling to 1 h); a new error raises a WARNING for the scheduler''s log. Returns retry_after.';
REVOKE ALL ON FUNCTION taskforge._tf_maintenance_failed(text, text, text, text, timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_maintenance_row_error.sql
-- taskforge._tf_maintenance_row_error(sqlstate text) -> boolean              (private helper)
--
-- Purpose:    tell the maintenance sweeps (tf_recover, tf_promote, tf_enqueue_periodic, tf_prune)
--             whether an error they caught is about the row they were processing, so that they
--             skip and record that row and go on with the others, or about the database or the
--             moment, so that they re-raise it and the whole call fails (and is repeated by its
--             caller, or stops it):
--               not about a row: classes 08 (connection), 25 (transaction state, e.g. 25006
--               read-only after a failover), 40 (deadlock, serialization failure), 42 (syntax or
--               access rule: a missing table, function or privilege fails every row alike), 53
--               (insufficient resources), 55 (e.g. 55P03 lock_not_available), 57 (operator
--               intervention), 58 (system error), F0 (configuration file);
--               about the row: every other SQLSTATE, e.g. 23xxx (a constraint the row's new
--               version breaks), 22xxx (a value of the row), P0001 (a trigger that refused the
--               row), XX000 (_tf_broken_invariant found the row broken), TFxxx (a refusal of the
--               rules, e.g. a periodic schedule's request that tf_submit refuses now).
--             query_canceled (57014, statement_timeout) and assert_failure never reach a sweep's
--             handler: PL/pgSQL's WHEN OTHERS does not catch them.
-- Parameters: sqlstate  the caught error's SQLSTATE (5 characters).
-- Returns:    true when the error is about the row; NULL sqlstate: false.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_maintenance_row_error(sqlstate text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT coalesce(left(_tf_maintenance_row_error.sqlstate, 2)
                    NOT IN ('08', '25', '40', '42', '53', '55', '57', '58', 'F0'), false);
$fn$;

COMMENT ON FUNCTION taskforge._tf_maintenance_row_error(text) IS
    'Private: true when a SQLSTATE caught by a maintenance sweep is about the row (skip and record it), false when about the database or the moment (08, 25, 40, 42, 53, 55, 57, 58, F0: re-raise).';
REVOKE ALL ON FUNCTION taskforge._tf_maintenance_row_error(text) FROM PUBLIC;

-- >>> db/functions/_tf_name_pattern.sql
-- taskforge._tf_name_pattern(kind text) -> text                        (private helper)
--
-- Purpose:    the one home of the name rules: the regular expression a queue name, a task
--             type name or a periodic schedule name must match. The table CHECKs (db/schema/50_name_rules.sql), every
--             validator (taskforge._tf_check_name, _tf_check_names, _tf_submit_one) and the
--             Python constants (taskforge.names, compared by a test) use it.
--               'queue'      ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$  (case-sensitive; ':' allowed)
--               'task_type'  ^[a-z][a-z0-9_.-]{0,62}$           (lower case, dotted namespaces)
--               'schedule'   ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$  (periodic schedules: as queues)
-- Parameters: kind  'queue' | 'task_type' | 'schedule'.
-- Returns:    the pattern (POSIX regular expression for ~), NULL for any other kind.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined and folded to a constant wherever it is called with a constant kind.
CREATE OR REPLACE FUNCTION taskforge._tf_name_pattern(kind text)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines and folds it into the calling expression (CHECK
-- constraints and the validators) as the literal pattern.
AS $fn$
    SELECT CASE kind
        WHEN 'queue' THEN '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$'
        WHEN 'task_type' THEN '^[a-z][a-z0-9_.-]{0,62}$'
        WHEN 'schedule' THEN '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_name_pattern(text) IS
    'Private: the regular expression a queue (kind ''queue''), task type (kind ''task_type'') or periodic schedule (kind ''schedule'') name must match.';
REVOKE ALL ON FUNCTION taskforge._tf_name_pattern(text) FROM PUBLIC;

-- >>> db/functions/_tf_notify_finished.sql
-- taskforge._tf_notify_finished() -> trigger                            (private helper)
--
-- Purpose:    the one home of the finished notification (tf_submit's notify_finished): when a
--             task submitted with notify_finished = true reaches a terminal state (SUCCEEDED,
--             FAILED or CANCELLED), whatever wrote it (tf_finalize, tf_finalize_many,
--             tf_finalize_and_claim: taskforge._tf_turn; tf_recover, an expired lease or a
--             passed deadline; tf_cancel of a QUEUED or RETRYING task; a cancel honoured at
--             finalize or recovery), the same transaction sends
--               pg_notify('taskforge_finished', task_id::text)
--             delivered when it commits, dropped when it rolls back. The channel and payload
--             are part of the API: a waiter LISTENs taskforge_finished first, then reads the task
--             (docs/sql-api.md#waiting-for-a-result).
-- Fires:      as the row trigger tasks_notify_finished (db/schema/55_triggers.sql): AFTER UPDATE
--             OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.notify_finished). Why a trigger:
--             three functions write terminal states (taskforge._tf_turn, tf_recover and
--             tf_cancel); no function is on every such path, the table is. Tasks without the flag
--             cost the WHEN test of one boolean column per updated row and never call this
--             function. Only a change into a terminal state notifies (a flagged task's claim or
--             retry does not; a task redriven by tf_retry notifies again when it ends again).
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none.
-- Locks:      none of its own; a NOTIFY serialises commits across the cluster (at commit), the
--             price of the flag, paid by the transactions that end a flagged task only.
-- Clock:      none.
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_notify_finished()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF NEW.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND OLD.state IS DISTINCT FROM NEW.state THEN
        PERFORM pg_notify('taskforge_finished', NEW.task_id::text);
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_notify_finished() IS
    'Private trigger function: NOTIFY taskforge_finished(task_id) when a task submitted with notify_finished reaches SUCCEEDED, FAILED or CANCELLED (delivered on commit).';
REVOKE ALL ON FUNCTION taskforge._tf_notify_finished() FROM PUBLIC;

-- >>> db/functions/_tf_notify_queues.sql
-- taskforge._tf_notify_queues(queues text[]) -> void                  (private helper)
--
-- Purpose:    wake idle workers: one pg_notify('taskforge', queue) per distinct queue that just
--             received work. The channel and payload are part of the API (workers LISTEN
--             taskforge; the payload is the queue name). Notifications are delivered when the
--             caller's transaction commits and dropped if it rolls back.
-- Parameters: queues  text[] of queue names, or NULL (nothing to send).
-- Returns:    nothing.  Errors: none.  Locks: none (NOTIFY serialises commits cluster-wide,
--             which is why claim and finalize never call it).  Clock: none.
-- By hand:    harmless (workers wake and find nothing new).
CREATE OR REPLACE FUNCTION taskforge._tf_notify_queues(queues text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_queue text;
BEGIN
    FOR v_queue IN SELECT DISTINCT q FROM unnest(queues) AS q WHERE q IS NOT NULL LOOP
        PERFORM pg_notify('taskforge', v_queue);
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_notify_queues(text[]) IS
    'Private: NOTIFY taskforge once per distinct queue name (delivered on commit).';
REVOKE ALL ON FUNCTION taskforge._tf_notify_queues(text[]) FROM PUBLIC;

-- >>> db/functions/_tf_outcome_ok.sql
-- taskforge._tf_outcome_ok(outcome text, result jsonb) -> boolean               (private helper)
--
-- Purpose:    the one home of the rule for how a worker may report an attempt's end in the
--             batch functions: the outcome is succeeded | failed | retryable | cancelled, and the
--             result is NULL or at most 1 MiB as JSON text and nested at most 100 levels deep
--             (taskforge._tf_json_too_deep). A plain SQL expression, inlined by the planner into
--             its callers (taskforge._tf_check_batch, taskforge._tf_valid_batch_of_one). The
--             precise error for a value it refuses, also tf_finalize's: taskforge._tf_check_outcome.
-- Parameters: outcome, result   one element of outcomes[] and results[].
-- Returns:    true when both are acceptable; false or NULL (a NULL outcome) otherwise.
-- Errors:     none (the checkers raise; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_outcome_ok(outcome text, result jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT outcome IN ('succeeded', 'failed', 'retryable', 'cancelled')
       AND (result IS NULL OR (octet_length(result::text) <= 1048576 AND NOT taskforge._tf_json_too_deep(result)))
$fn$;

COMMENT ON FUNCTION taskforge._tf_outcome_ok(text, jsonb) IS
    'Private: true when an (outcome, result) element of a batch finalize is acceptable (a known outcome; a result of at most 1 MiB, nested at most 100 levels).';
REVOKE ALL ON FUNCTION taskforge._tf_outcome_ok(text, jsonb) FROM PUBLIC;

-- >>> db/functions/_tf_promote_rows.sql
-- taskforge._tf_promote_rows(task_ids bigint[], now timestamptz)
--   -> TABLE(promoted int, queues text[])                                    (private helper)
--
-- Purpose:    the write of tf_promote for the given tasks, which the caller has locked (FOR
--             UPDATE) and found RETRYING and due: each becomes QUEUED (no attempt is created).
--             The state is tested again here, so a task no longer RETRYING is left alone. Each
--             task is read by primary key, whatever the statistics of the partial indexes say.
--             tf_promote calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             now       tf_promote's clock (updated_at).
-- Returns:    one row: promoted = tasks moved to QUEUED; queues = their queues (duplicates
--             possible; for NOTIFY).
-- Errors:     whatever the write raises (a CHECK, a trigger, ...): nothing is written then.
-- Locks:      the given tasks rows (already the caller's).
-- Plans:      SET plan_cache_mode = force_custom_plan (the ids are a parameter).
-- Clock:      the caller's now.
-- By hand:    no: call tf_promote, which locks and checks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_promote_rows(task_ids bigint[], now timestamptz)
RETURNS TABLE(promoted int, queues text[])
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS MATERIALIZED (
        -- Each given task by primary key (LIMIT 1 keeps the state test out of the lookup, so no
        -- plan walks tasks_retry_due_idx, which holds every RETRYING task), then the state test.
        SELECT t.task_id
          FROM unnest(_tf_promote_rows.task_ids) AS i(task_id)
         CROSS JOIN LATERAL (SELECT x.task_id, x.state FROM taskforge.tasks x
                              WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
         WHERE t.state = 'RETRYING'
    ), moved AS (
        -- Joined by task_id alone: the rows are the caller's (locked), tested above.
        UPDATE taskforge.tasks t
           SET state = 'QUEUED', updated_at = _tf_promote_rows.now
          FROM due d
         WHERE t.task_id = d.task_id
        RETURNING t.queue
    )
    SELECT count(*)::int, coalesce(array_agg(m.queue::text), '{}') FROM moved m;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_promote_rows(bigint[], timestamptz) IS
    'Private: tf_promote''s write for locked due RETRYING tasks (to QUEUED); returns the count and their queues.';
REVOKE ALL ON FUNCTION taskforge._tf_promote_rows(bigint[], timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_prune_rows.sql
-- taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz) -> int     (private helper)
--
-- Purpose:    the deletes of tf_prune for the given tasks, which the caller has locked (FOR
--             UPDATE) and chosen: each task (read by primary key) still terminal and finished
--             before cutoff is deleted, its attempts with it (ON DELETE CASCADE) and its
--             idempotency key (taskforge.idempotency_keys), then the dependency edges of the
--             deleted tasks, both ways (task_dependencies has no foreign keys: 20_tables.sql).
--             tf_prune calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             cutoff    tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks deleted.
-- Errors:     whatever a delete raises (a trigger, a foreign key, ...): nothing is deleted then.
-- Locks:      the given tasks rows (already the caller's), their attempts and edges.
-- Plans:      SET plan_cache_mode = force_generic_plan, overriding tf_prune's force_custom_plan,
--             with sequential scans, hash and merge joins and JIT off, as on the hot path
--             (docs/design.md, "Plan stability"): its statements and the foreign key's cascade
--             (a DELETE of attempts per deleted task, run by PostgreSQL) each keep one cached
--             plan. None joins a table: the tasks are looked up one by one from the ids (LATERAL,
--             by primary key) and deleted by id (task_id = ANY), their keys by primary key from
--             the deleted rows (a nested loop over them), so the generic plan is right
--             whatever the number of ids or the size of the tables. Under the caller's setting the
--             cascade was planned again for every task: 214,000 backend instructions per pruned
--             task before, 140,000 after (bench/turn_instructions.sh prune; docs/benchmarks.md,
--             "Retention's cost"). tests/sql/test_plans.py checks the plans cached on empty tables.
-- Clock:      none (the caller's cutoff).
-- By hand:    no: call tf_prune, which chooses and locks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    -- Each given task by primary key (LIMIT 1 keeps the tests out of the lookup, so no plan
    -- walks tasks_finished_idx, which holds all finished history), then the tests.
    SELECT array_agg(t.task_id) INTO v_ids
      FROM unnest(_tf_prune_rows.task_ids) AS i(task_id)
     CROSS JOIN LATERAL (SELECT x.task_id, x.state, x.finished_at FROM taskforge.tasks x
                          WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
     WHERE t.finished_at < _tf_prune_rows.cutoff AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    -- By id, joining nothing (the rows are the caller's, locked, and tested above); the
    -- attempts go with them (the foreign key's ON DELETE CASCADE), the keys of keyed ones after.
    WITH gone AS (DELETE FROM taskforge.tasks t WHERE t.task_id = ANY (v_ids) RETURNING t.idempotency_key)
    DELETE FROM taskforge.idempotency_keys k USING gone
     WHERE gone.idempotency_key IS NOT NULL AND k.idempotency_key = gone.idempotency_key;
    IF EXISTS (SELECT 1 FROM taskforge.task_dependencies LIMIT 1) THEN
        DELETE FROM taskforge.task_dependencies d
         WHERE d.child_task_id = ANY (v_ids) OR d.parent_task_id = ANY (v_ids);
    END IF;
    RETURN cardinality(v_ids);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) IS
    'Private: tf_prune''s deletes for locked chosen tasks (still terminal, finished before cutoff), with their attempts and dependency edges; returns the count.';
REVOKE ALL ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_recover_rows.sql
-- taskforge._tf_recover_rows(task_ids bigint[], now timestamptz)
--   -> TABLE(requeued int, ended int, queues text[])                        (private helper)
--
-- Purpose:    the writes of tf_recover for the given tasks, which the caller has locked (FOR
--             UPDATE) and found RUNNING with an expired lease: in one statement the current
--             attempt becomes ABANDONED (outcome timed_out when the lease had reached the
--             attempt's deadline, else lease_expired; finished_at = now) and the task QUEUED at
--             once when budget remains, CANCELLED when a cancel was requested while it ran, else
--             FAILED (last_error type lease_expired or timed_out). Expiry is tested again here,
--             so a task no longer RUNNING or whose lease is valid is left alone. Each task is read
--             by primary key, whatever the statistics of the partial indexes say.
--             tf_recover calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             now       tf_recover's clock.
-- Returns:    one row: requeued = tasks put back to QUEUED; ended = tasks FAILED or CANCELLED;
--             queues = the queues of the requeued tasks (duplicates possible; for NOTIFY).
-- Errors:     whatever a write raises (a CHECK, a trigger, ...): nothing is written then.
-- Locks:      the given tasks rows (already the caller's) and their current attempts.
-- Plans:      SET plan_cache_mode = force_custom_plan (the ids are a parameter).
-- Clock:      the caller's now.
-- By hand:    no: call tf_recover, which locks and checks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_recover_rows(task_ids bigint[], now timestamptz)
RETURNS TABLE(requeued int, ended int, queues text[])
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_recover_rows.now;
BEGIN
    RETURN QUERY
    WITH expired AS MATERIALIZED (
        -- Each given task by primary key (LIMIT 1 keeps the tests below out of the lookup, so no
        -- plan can walk tasks_lease_expiry_idx once per task), then the expiry test.
        SELECT t.task_id, o.outcome,
               taskforge._tf_task_state_after(o.outcome, t.cancel_requested_at IS NOT NULL,
                                              t.attempt_count, t.max_attempts) AS next_state
          FROM unnest(_tf_recover_rows.task_ids) AS i(task_id)
         CROSS JOIN LATERAL (SELECT x.task_id, x.state, x.lease_expires_at, x.deadline_at, x.cancel_requested_at,
                                    x.attempt_count, x.max_attempts
                               FROM taskforge.tasks x WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
         CROSS JOIN LATERAL (SELECT CASE WHEN t.deadline_at <= t.lease_expires_at THEN 'timed_out'
                                         ELSE 'lease_expired' END AS outcome) o
         WHERE t.state = 'RUNNING' AND t.lease_expires_at <= v_now
    ), moved AS (
        -- Joined by task_id alone: the rows are the caller's (locked), tested above.
        UPDATE taskforge.tasks t
           SET state = e.next_state,
               scheduled_at = CASE WHEN e.next_state = 'QUEUED' THEN v_now ELSE t.scheduled_at END,
               finished_at = CASE WHEN e.next_state = 'QUEUED' THEN NULL ELSE v_now END,
               last_error = CASE WHEN e.next_state = 'FAILED' AND e.outcome = 'timed_out'
                                 THEN jsonb_build_object('type', 'timed_out', 'message',
                                      format('attempt %s ran past its deadline of %s s and no attempts remain',
                                             t.attempt_count, t.timeout_seconds))
                                 WHEN e.next_state = 'FAILED'
                                 THEN jsonb_build_object('type', 'lease_expired', 'message',
                                      format('attempt %s lost its lease and no attempts remain', t.attempt_count))
                                 ELSE t.last_error END,
               owner_worker_id = NULL,
               lease_expires_at = NULL,
               deadline_at = NULL,
               updated_at = v_now
          FROM expired e
         WHERE t.task_id = e.task_id
        RETURNING t.task_id, t.attempt_count, t.state, t.queue, e.outcome
    ), abandoned AS (
        UPDATE taskforge.attempts a
           SET state = taskforge._tf_attempt_state_after(m.outcome),
               outcome = m.outcome,
               finished_at = v_now,
               error = CASE m.outcome
                           WHEN 'timed_out' THEN jsonb_build_object('type', 'timed_out',
                                'message', 'the attempt ran past its deadline (no lease is granted beyond it)')
                           ELSE jsonb_build_object('type', 'lease_expired',
                                'message', 'the lease expired before the attempt was finalized') END
          FROM moved m
         WHERE a.task_id = m.task_id AND a.attempt_number = m.attempt_count AND a.state = 'RUNNING'
        RETURNING a.task_id
    )
    SELECT (count(*) FILTER (WHERE m.state = 'QUEUED'))::int,
           (count(*) FILTER (WHERE m.state <> 'QUEUED'))::int,
           coalesce(array_agg(m.queue::text) FILTER (WHERE m.state = 'QUEUED'), '{}')
      FROM moved m;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_recover_rows(bigint[], timestamptz) IS
    'Private: tf_recover''s writes for locked expired tasks (attempt ABANDONED, task QUEUED/FAILED/CANCELLED); returns the counts and the requeued queues.';
REVOKE ALL ON FUNCTION taskforge._tf_recover_rows(bigint[], timestamptz) FROM PUBLIC;

-- >>> db/functions/_tf_release_children.sql
-- taskforge._tf_release_children() -> trigger                          (private helper)
--
-- Purpose:    the one home of the dependency rules (tf_submit's depends_on, docs/workflows.md):
--             when a task that has children (tasks.has_children) changes state, its children
--             follow, in the same transaction:
--               -> SUCCEEDED         each BLOCKED child counts one unfinished parent fewer
--                                    (parents_pending); the child whose count reaches 0 becomes
--                                    QUEUED, due at its own scheduled_at, and its queue gets the
--                                    usual wake-up (pg_notify('taskforge', queue)) when it is due.
--               -> FAILED, CANCELLED every BLOCKED descendant (children, their children, ...,
--                                    through BLOCKED tasks only) ends CANCELLED with cancel_reason
--                                    'dependency_failed', finished_at now and no attempt, in one
--                                    statement (the descendants' own firings see it done).
--               FAILED or CANCELLED -> a live state (tf_retry, the operator's redrive)
--                                    each child that was CANCELLED with 'dependency_failed'
--                                    becomes BLOCKED again, counting its parents not SUCCEEDED,
--                                    unless another of its parents is still FAILED or CANCELLED;
--                                    such a child has children of its own, so the same rule
--                                    carries the redrive down the graph (one trigger level per
--                                    generation).
--             A SUCCEEDED task never changes state again, so each parent's success is counted
--             once.
-- Fires:      as the row trigger tasks_release_children (db/schema/55_triggers.sql): AFTER UPDATE
--             OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.has_children). Why a trigger:
--             the terminal states are written by taskforge._tf_turn (finalize), tf_recover,
--             tf_cancel and the cancel cascade itself; the table is on every such path. Tasks
--             without children pay the WHEN test of one boolean column and never call this.
-- Concurrency: the children are changed by UPDATE statements, which lock each child row and
--             re-read its latest version: two parents of one child succeeding in concurrent
--             transactions are counted one after the other (the second waits for the first's
--             commit), so the last success always sees a count of 1. A submit that adds a child
--             locks the parent first (taskforge._tf_submit_one), so a parent cannot end unseen
--             between the child's read of its state and the child's commit. The redrive locks
--             the other parents (FOR SHARE) before it counts them, so a parent succeeding at the
--             same time is either counted as SUCCEEDED or decrements the count afterwards.
--             Two transactions ending parents that share children in opposite orders can
--             deadlock (40P01; one is rolled back and the worker's finalize is retried).
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none of its own.
-- Locks:      the children's (and descendants') rows; for the redrive, the other parents' rows.
-- Clock:      NEW.updated_at: the now of the statement that changed the parent, so the child's
--             finished_at or updated_at equals its parent's.
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_release_children()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz := NEW.updated_at;
    v_queues text[];
BEGIN
    IF OLD.state IS NOT DISTINCT FROM NEW.state THEN
        RETURN NULL;
    END IF;
    IF NEW.state = 'SUCCEEDED' THEN
        WITH released AS (
            UPDATE taskforge.tasks c
               SET parents_pending = c.parents_pending - 1,
                   state = CASE WHEN c.parents_pending <= 1 THEN 'QUEUED' ELSE 'BLOCKED' END,
                   updated_at = v_now
              FROM taskforge.task_dependencies d
             WHERE d.parent_task_id = NEW.task_id AND c.task_id = d.child_task_id AND c.state = 'BLOCKED'
            RETURNING c.state, c.queue, c.scheduled_at
        )
        SELECT array_agg(DISTINCT r.queue) INTO v_queues
          FROM released r WHERE r.state = 'QUEUED' AND r.scheduled_at <= v_now;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    ELSIF NEW.state IN ('FAILED', 'CANCELLED') THEN
        IF pg_trigger_depth() > 1 AND OLD.state = 'BLOCKED' AND NEW.cancel_reason = 'dependency_failed' THEN
            -- Cancelled by the cascade below, which has reached its descendants already.
            RETURN NULL;
        END IF;
        WITH RECURSIVE descendants AS (
            SELECT d.child_task_id AS task_id
              FROM taskforge.task_dependencies d
             WHERE d.parent_task_id = NEW.task_id
            UNION
            SELECT d.child_task_id
              FROM descendants s
              JOIN taskforge.task_dependencies d ON d.parent_task_id = s.task_id
        )
        UPDATE taskforge.tasks c
           SET state = 'CANCELLED', parents_pending = 0, cancel_requested_at = v_now,
               cancel_reason = 'dependency_failed', finished_at = v_now, updated_at = v_now
          FROM descendants s
         WHERE c.task_id = s.task_id AND c.state = 'BLOCKED';
    ELSIF OLD.state IN ('FAILED', 'CANCELLED') AND NEW.state NOT IN ('FAILED', 'CANCELLED') THEN
        -- The other parents of the children to redrive, locked before they are counted.
        PERFORM 1
           FROM taskforge.tasks p
          WHERE p.task_id IN (SELECT o.parent_task_id
                                FROM taskforge.task_dependencies d
                                JOIN taskforge.tasks c ON c.task_id = d.child_task_id
                                JOIN taskforge.task_dependencies o ON o.child_task_id = c.task_id
                               WHERE d.parent_task_id = NEW.task_id AND c.state = 'CANCELLED'
                                 AND c.cancel_reason = 'dependency_failed' AND o.parent_task_id <> NEW.task_id)
          ORDER BY p.task_id
            FOR SHARE OF p;
        UPDATE taskforge.tasks c
           SET state = 'BLOCKED',
               parents_pending = (SELECT count(*) FROM taskforge.task_dependencies o
                                    JOIN taskforge.tasks p ON p.task_id = o.parent_task_id
                                   WHERE o.child_task_id = c.task_id AND p.state <> 'SUCCEEDED'),
               cancel_requested_at = NULL, cancel_reason = NULL, finished_at = NULL, updated_at = v_now
          FROM taskforge.task_dependencies d
         WHERE d.parent_task_id = NEW.task_id AND c.task_id = d.child_task_id
           AND c.state = 'CANCELLED' AND c.cancel_reason = 'dependency_failed'
           AND NOT EXISTS (SELECT 1 FROM taskforge.task_dependencies o
                             JOIN taskforge.tasks p ON p.task_id = o.parent_task_id
                            WHERE o.child_task_id = c.task_id AND p.state IN ('FAILED', 'CANCELLED'));
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_release_children() IS
    'Private trigger (tasks_release_children): a parent SUCCEEDED releases its BLOCKED children when their last parent succeeds (QUEUED); FAILED/CANCELLED cancels its BLOCKED descendants (dependency_failed); a redriven parent re-blocks the children it cancelled.';
REVOKE ALL ON FUNCTION taskforge._tf_release_children() FROM PUBLIC;

-- >>> db/functions/_tf_renew_attempts.sql
-- taskforge._tf_renew_attempts(worker_id uuid, task_ids bigint[], attempt_numbers int[],
--     lease_seconds double precision)
--   -> TABLE(task_id bigint, attempt_number int, renewed boolean, lease_expires_at timestamptz,
--            cancel_requested boolean, reason text)                    (private helper)
--
-- Purpose:    the one write path of a lease renewal, shared by tf_renew (a batch of one) and
--             tf_renew_many: extend each attempt's lease to now + lease_seconds, never past its
--             deadline (tasks.deadline_at), on the task and on its attempt row, when the guard
--             holds (taskforge._tf_guard_batch: busy, not_found, then not_running |
--             stale_attempt | not_owner | timed_out | lease_expired).
-- Parameters: worker_id, task_ids, attempt_numbers, lease_seconds   validated by the caller
--             (taskforge._tf_check_batch and _tf_check_seconds, or tf_renew's own checks).
-- Returns:    one row per element, in input order, as tf_renew_many.
-- Errors:     none of its own.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks rows (never waits: a row another transaction
--             holds is busy; rows the caller locked already are its own), then their attempt rows.
-- Plans:      two statements, each with one cached generic plan: the first locks and judges
--             the elements (each element drives a LATERAL lookup of its task by primary key, so
--             the plan cannot start from the table); the second extends the leases of the
--             accepted ones, naming the rows by id (task_id = ANY (...)) and joining nothing
--             (each row's new lease is computed from the row itself). Pinned with SET
--             enable_seqscan/hashjoin/mergejoin = off (jit = off: those settings inflate plan
--             costs past jit_above_cost).
-- Clock:      clock_timestamp() once (nothing is waited for): guard and new deadline.
-- By hand:    use tf_renew or tf_renew_many.
CREATE OR REPLACE FUNCTION taskforge._tf_renew_attempts(
    worker_id uuid,
    task_ids bigint[],
    attempt_numbers int[],
    lease_seconds double precision)
RETURNS TABLE(task_id bigint, attempt_number int, renewed boolean, lease_expires_at timestamptz,
              cancel_requested boolean, reason text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_lease timestamptz;
    v_ids bigint[];
    v_attempts int[];
    v_renewed boolean[];
    v_cancel boolean[];
    v_reasons text[];
    v_deadlines timestamptz[];
    v_accepted bigint[];
BEGIN
    v_now := clock_timestamp();
    v_lease := v_now + make_interval(secs => _tf_renew_attempts.lease_seconds);
    -- Lock what is free and judge each element; a row another transaction holds is reported
    -- busy, never waited for (taskforge._tf_guard_batch).
    SELECT array_agg(j.task_id ORDER BY j.ord), array_agg(j.attempt_number ORDER BY j.ord),
           array_agg(j.reason IS NULL ORDER BY j.ord), array_agg(j.cancel ORDER BY j.ord),
           array_agg(j.reason ORDER BY j.ord), array_agg(j.deadline_at ORDER BY j.ord),
           coalesce(array_agg(j.task_id) FILTER (WHERE j.reason IS NULL), '{}')
      INTO v_ids, v_attempts, v_renewed, v_cancel, v_reasons, v_deadlines, v_accepted
      FROM (SELECT r.ord, r.task_id, r.attempt_number, t.deadline_at,
                   CASE WHEN t.task_id IS NOT NULL THEN t.cancel_requested_at IS NOT NULL
                        ELSE (SELECT x.cancel_requested_at IS NOT NULL FROM taskforge.tasks x WHERE x.task_id = r.task_id)
                   END AS cancel,
                   taskforge._tf_guard_batch(t.task_id IS NOT NULL,
                                             EXISTS (SELECT 1 FROM taskforge.tasks x WHERE x.task_id = r.task_id),
                                             t.state, t.attempt_count, t.owner_worker_id, t.deadline_at,
                                             t.lease_expires_at, _tf_renew_attempts.worker_id, r.attempt_number, v_now)
                       AS reason
              FROM unnest(_tf_renew_attempts.task_ids, _tf_renew_attempts.attempt_numbers)
                   WITH ORDINALITY AS r(task_id, attempt_number, ord)
              LEFT JOIN LATERAL (
                  SELECT l.task_id, l.state, l.attempt_count, l.owner_worker_id, l.deadline_at, l.lease_expires_at,
                         l.cancel_requested_at
                    FROM taskforge.tasks l
                   WHERE l.task_id = r.task_id
                     FOR UPDATE SKIP LOCKED) AS t ON true) AS j;

    RETURN QUERY
    WITH extended AS (
        UPDATE taskforge.tasks t
           SET lease_expires_at = least(v_lease, t.deadline_at), updated_at = v_now
         WHERE t.task_id = ANY (v_accepted)
    ), attempt_leases AS (
        -- The RUNNING attempt of each renewed task (its deadline_at is the task's).
        UPDATE taskforge.attempts a
           SET lease_expires_at = least(v_lease, a.deadline_at)
         WHERE a.task_id = ANY (v_accepted) AND a.state = 'RUNNING'
    )
    SELECT r.task_id, r.attempt_number, r.renewed, CASE WHEN r.renewed THEN least(v_lease, r.deadline_at) END,
           r.cancel, r.reason
      FROM unnest(v_ids, v_attempts, v_renewed, v_cancel, v_reasons, v_deadlines)
           WITH ORDINALITY AS r(task_id, attempt_number, renewed, cancel, reason, deadline_at, ord)
     ORDER BY r.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_renew_attempts(uuid, bigint[], int[], double precision) IS
    'Private: the one write path of lease renewal (tf_renew, tf_renew_many): guard per element, SKIP LOCKED (busy), lease never past the deadline; one row per element in input order.';
REVOKE ALL ON FUNCTION taskforge._tf_renew_attempts(uuid, bigint[], int[], double precision) FROM PUBLIC;

-- >>> db/functions/_tf_retry_delay.sql
-- taskforge._tf_retry_delay(task_type text, failed_attempt int) -> double precision
--                                                                          (private helper)
--
-- Purpose:    the backoff before a task's next attempt, in seconds, from its task type's policy
--             (taskforge.task_types: base, cap, jitter; the formula is tf_backoff's). A
--             function, not a subquery, so that a finalize statement pays for the lookup only
--             for the tasks that retry.
-- Parameters: task_type       the task's type.
--             failed_attempt  the number of the attempt that failed (1, 2, ...).
-- Returns:    seconds, 0 <= s <= the type's cap; 0 when the type has no row.
-- Errors:     none of its own (tf_backoff's checks pass for stored policies).
-- Locks:      none.  Clock: none (random() for the jitter).  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_retry_delay(task_type text, failed_attempt int)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE  -- random jitter
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN coalesce((SELECT taskforge.tf_backoff(_tf_retry_delay.failed_attempt, tt.backoff_base_seconds,
                                                 tt.backoff_cap_seconds, tt.backoff_jitter)
                       FROM taskforge.task_types tt WHERE tt.task_type = _tf_retry_delay.task_type), 0);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_retry_delay(text, int) IS
    'Private: seconds of backoff before the next attempt, from the task type''s policy (tf_backoff).';
REVOKE ALL ON FUNCTION taskforge._tf_retry_delay(text, int) FROM PUBLIC;

-- >>> db/functions/_tf_sorted_at.sql
-- taskforge._tf_sorted_at(ids bigint[], id bigint) -> int                    (private helper)
--
-- Purpose:    where a sorted array of task ids holds id, by binary search (width_bucket), so
--             that a batch statement looking each of its rows up in such an array (and in
--             arrays aligned with it) costs n log n, not n^2. A plain SQL expression, inlined by
--             the planner.
-- Parameters: ids  task ids sorted ascending, no NULL (as aggregated ORDER BY task_id).
--             id   the task id to look for.
-- Returns:    the (1-based) position of id in ids, or NULL when ids does not hold it (also for
--             an empty or NULL array); arr[NULL] is NULL, so arr[_tf_sorted_at(ids, id)] is the
--             aligned element or NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_sorted_at(ids bigint[], id bigint)
RETURNS int
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT CASE WHEN ids[pg_catalog.width_bucket(id, ids)] = id THEN pg_catalog.width_bucket(id, ids) END
$fn$;

COMMENT ON FUNCTION taskforge._tf_sorted_at(bigint[], bigint) IS
    'Private: the position of id in a sorted array of task ids (binary search), NULL when absent.';
REVOKE ALL ON FUNCTION taskforge._tf_sorted_at(bigint[], bigint) FROM PUBLIC;

-- >>> db/functions/_tf_submit_one.sql
-- taskforge._tf_submit_one(task_type text, payload jsonb, queue text, priority numeric,
--     max_attempts numeric, scheduled_at timestamptz, idempotency_key text, now timestamptz,
--     argument_prefix text, validate_only boolean DEFAULT false,
--     timeout_seconds double precision DEFAULT NULL, delay_seconds double precision DEFAULT NULL,
--     notify_finished boolean DEFAULT false, traceparent text DEFAULT NULL,
--     depends_on bigint[] DEFAULT NULL, rate_key text DEFAULT NULL,
--     concurrency_key text DEFAULT NULL, ordering_key text DEFAULT NULL)
--   -> (task_id bigint, state text, created boolean, due_now boolean)   (private helper)
--
-- Purpose:    the per-request core of tf_submit, tf_submit_many and tf_enqueue_periodic
--             (and the validation of tf_schedule_periodic): validate one request,
--             then insert it or resolve its idempotency key. The rules (validation, key
--             reservation, fingerprint, replay, TF409) are tf_submit's; see its header.
--             The new task takes timeout_seconds when given, else its type's timeout_seconds
--             (the attempt deadline) as it is now; its scheduled_at is scheduled_at, else
--             now + delay_seconds, else now. With depends_on it starts BLOCKED while a parent
--             is not SUCCEEDED (parents_pending counts them), QUEUED when all are, and
--             CANCELLED (cancel_reason 'dependency_failed', no attempt) when one is FAILED or
--             CANCELLED already; the edges go into taskforge.task_dependencies and each parent
--             is marked has_children, so its terminal transition releases or cancels the child
--             (taskforge._tf_release_children).
-- Parameters: task_type .. idempotency_key  one request, as tf_submit receives it.
--             now              the caller's clock_timestamp(): created_at, updated_at and the
--                              schedule when scheduled_at is NULL (now + delay_seconds with a
--                              delay).
--             argument_prefix  put before every argument name in TF400/TF409 messages and
--                              COLUMN: '' for tf_submit, 'requests[3].' for tf_submit_many.
--             validate_only    true: stop after the validation and return NULLs (created =
--                              false); tf_schedule_periodic checks the request a schedule will
--                              submit with exactly these rules.
--             timeout_seconds  this task's attempt timeout, 0 < s <= 604800, or NULL for its
--                              type's (part of the fingerprint when given).
--             delay_seconds, notify_finished, traceparent
--                              as tf_submit's (its header has the rules: at most one of
--                              scheduled_at and delay_seconds, the delay as given in the
--                              fingerprint, the other two outside it).
--             depends_on       parent task ids (resolved: tf_submit_many turns positions into
--                              ids first), a one-dimensional array of at most 1000, no NULL
--                              element; duplicates count once.
--                              NULL or empty: none. In the fingerprint (sorted, distinct).
--             rate_key, concurrency_key, ordering_key
--                              flow-control keys (docs/flow-control.md), 1..200 characters or
--                              NULL; in the fingerprint when given. An ordering key's row in
--                              taskforge.ordering_keys is locked until the caller commits, so
--                              the submits of one key commit in task id order.
-- Returns:    the task id, its current state, whether this call created it, and due_now:
--             created and scheduled at or before now. Sends no NOTIFY: the caller does, for
--             the requests that are due_now.
-- Errors:     TF400 '<prefix><argument>: <problem>'; TF409 '<prefix>idempotency_key: ...';
--             TF404 '<prefix>depends_on: task N does not exist'; XX000 when a key's row names a
--             task that does not exist (a row deleted outside the tf_* functions).
-- Locks:      inserts one tasks row (and with a key one taskforge.idempotency_keys row first);
--             on a key conflict waits for the competing inserter. With
--             depends_on, the parents' rows (FOR NO KEY UPDATE, in id order: a parent ending
--             at the same time waits, or is waited for, so no release is missed); with an
--             ordering key, its taskforge.ordering_keys row (FOR UPDATE).
-- Clock:      none of its own (uses now).
-- By hand:    no; call tf_submit.
CREATE OR REPLACE FUNCTION taskforge._tf_submit_one(
    task_type text,
    payload jsonb,
    queue text,
    priority numeric,
    max_attempts numeric,
    scheduled_at timestamptz,
    idempotency_key text,
    now timestamptz,
    argument_prefix text,
    validate_only boolean DEFAULT false,
    timeout_seconds double precision DEFAULT NULL,
    delay_seconds double precision DEFAULT NULL,
    notify_finished boolean DEFAULT false,
    traceparent text DEFAULT NULL,
    depends_on bigint[] DEFAULT NULL,
    rate_key text DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    ordering_key text DEFAULT NULL,
    OUT task_id bigint,
    OUT state text,
    OUT created boolean,
    OUT due_now boolean)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c_max_payload_bytes constant int := 1048576;
    p constant text := _tf_submit_one.argument_prefix;
    v_fingerprint bytea;
    v_stored bytea;
    v_type_found boolean;
    v_timeout double precision;
    v_scheduled_at timestamptz;
    v_payload_bytes int;
    v_parents bigint[];
    v_flow jsonb;
    v_state text := 'QUEUED';
    v_pending int := 0;
    v_failed int := 0;
    v_found int;
    v_missing bigint;
    v_locked boolean := false;
    v_new_id bigint;
    v_retried boolean := false;
BEGIN
    -- Validation: every argument, before anything is written.
    IF _tf_submit_one.task_type IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'task_type', 'must not be NULL');
    END IF;
    -- The type must be registered; its attempt timeout is copied to the task.
    SELECT true, tt.timeout_seconds INTO v_type_found, v_timeout
      FROM taskforge.task_types tt WHERE tt.task_type = _tf_submit_one.task_type;
    IF v_type_found IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'task_type', format('unknown task type %s (register it with tf_register_task_type)',
            quote_literal(left(_tf_submit_one.task_type, 100))));
    END IF;
    IF _tf_submit_one.payload IS NULL OR jsonb_typeof(_tf_submit_one.payload) <> 'object' THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be a JSON object, got %s',
            coalesce(jsonb_typeof(_tf_submit_one.payload), 'NULL')));
    END IF;
    -- Size before rendering: pg_column_size reads the jsonb value's own length. jsonb takes at
    -- most about 4 bytes per byte of JSON text (an array of 0s), so a value over 8 times the cap
    -- is too long as text: refused without rendering it. The sizes go to _tf_invalid as numbers:
    -- a statement naming the payload would copy it (issue 10 item 2, docs/sql-api.md).
    v_payload_bytes := pg_column_size(_tf_submit_one.payload);
    IF v_payload_bytes > 8 * c_max_payload_bytes THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be at most %s bytes as JSON text, got a jsonb value of %s bytes',
            c_max_payload_bytes, v_payload_bytes));
    END IF;
    v_payload_bytes := octet_length(_tf_submit_one.payload::text);
    IF v_payload_bytes > c_max_payload_bytes THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be at most %s bytes as JSON text, got %s',
            c_max_payload_bytes, v_payload_bytes));
    END IF;
    -- Nesting depth (the limit lives in taskforge._tf_json_too_deep; see tf_submit's header).
    IF taskforge._tf_json_too_deep(_tf_submit_one.payload) THEN
        PERFORM taskforge._tf_invalid(p || 'payload', 'must be nested at most 100 levels deep (objects and arrays, the payload itself counting as 1), got more');
    END IF;
    IF _tf_submit_one.queue IS NULL OR _tf_submit_one.queue !~ taskforge._tf_name_pattern('queue') THEN
        PERFORM taskforge._tf_check_name(p || 'queue', _tf_submit_one.queue, 'queue');
    END IF;
    -- The bounds are tested inline first: a call per check costs more than the check (batches).
    IF _tf_submit_one.priority IS NULL OR _tf_submit_one.priority NOT BETWEEN -32768 AND 32767
       OR _tf_submit_one.priority <> trunc(_tf_submit_one.priority) THEN
        PERFORM taskforge._tf_check_int(p || 'priority', _tf_submit_one.priority, -32768, 32767);
    END IF;
    IF _tf_submit_one.max_attempts IS NULL OR _tf_submit_one.max_attempts NOT BETWEEN 1 AND 1000
       OR _tf_submit_one.max_attempts <> trunc(_tf_submit_one.max_attempts) THEN
        PERFORM taskforge._tf_check_int(p || 'max_attempts', _tf_submit_one.max_attempts, 1, 1000);
    END IF;
    IF _tf_submit_one.scheduled_at IN ('infinity'::timestamptz, '-infinity'::timestamptz) THEN
        PERFORM taskforge._tf_invalid(p || 'scheduled_at', 'must be a finite timestamp or NULL');
    END IF;
    IF _tf_submit_one.idempotency_key IS NOT NULL AND length(_tf_submit_one.idempotency_key) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid(p || 'idempotency_key', format('must be 1 to 200 characters, got %s',
            length(_tf_submit_one.idempotency_key)));
    END IF;
    IF _tf_submit_one.timeout_seconds IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds(p || 'timeout_seconds', _tf_submit_one.timeout_seconds, 0, 604800, true);
        v_timeout := _tf_submit_one.timeout_seconds;
    END IF;
    v_scheduled_at := coalesce(_tf_submit_one.scheduled_at, _tf_submit_one.now);
    IF _tf_submit_one.delay_seconds IS NOT NULL THEN
        IF _tf_submit_one.scheduled_at IS NOT NULL THEN
            PERFORM taskforge._tf_invalid(p || 'delay_seconds', 'give at most one of scheduled_at and delay_seconds');
        END IF;
        -- At most 100 years of 365.25 days.
        PERFORM taskforge._tf_check_seconds(p || 'delay_seconds', _tf_submit_one.delay_seconds, 0, 3155760000);
        v_scheduled_at := _tf_submit_one.now + make_interval(secs => _tf_submit_one.delay_seconds);
    END IF;
    IF _tf_submit_one.notify_finished IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'notify_finished', 'must be true or false, got NULL');
    END IF;
    IF NOT taskforge._tf_traceparent_ok(_tf_submit_one.traceparent) THEN
        PERFORM taskforge._tf_invalid(p || 'traceparent', format('must be a W3C trace context traceparent: '
            || 'version-trace_id-parent_id-flags as 2, 32, 16 and 2 lower-case hex digits, the version not ff, '
            || 'neither id all zeros (e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01), got %s',
            quote_literal(left(_tf_submit_one.traceparent, 100))));
    END IF;
    IF cardinality(_tf_submit_one.depends_on) > 0 THEN
        -- Before array_position, which refuses a multidimensional array with 0A000.
        IF array_ndims(_tf_submit_one.depends_on) > 1 THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must be a one-dimensional array, got %s dimensions',
                array_ndims(_tf_submit_one.depends_on)));
        END IF;
        IF array_position(_tf_submit_one.depends_on, NULL) IS NOT NULL THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must not contain NULL (element %s is NULL)',
                array_position(_tf_submit_one.depends_on, NULL) - 1));
        END IF;
        v_parents := ARRAY(SELECT DISTINCT d FROM unnest(_tf_submit_one.depends_on) AS d ORDER BY d);
        IF cardinality(v_parents) > 1000 THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must name at most 1000 parent tasks, got %s',
                cardinality(v_parents)));
        END IF;
    END IF;
    IF coalesce(_tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key) IS NOT NULL THEN
        PERFORM taskforge._tf_check_flow_key(p || 'rate_key', _tf_submit_one.rate_key),
                taskforge._tf_check_flow_key(p || 'concurrency_key', _tf_submit_one.concurrency_key),
                taskforge._tf_check_flow_key(p || 'ordering_key', _tf_submit_one.ordering_key);
    END IF;
    IF _tf_submit_one.validate_only THEN
        _tf_submit_one.created := false;
        _tf_submit_one.due_now := false;
        RETURN;
    END IF;

    IF v_parents IS NOT NULL OR _tf_submit_one.rate_key IS NOT NULL OR _tf_submit_one.concurrency_key IS NOT NULL
       OR _tf_submit_one.ordering_key IS NOT NULL THEN
        v_flow := jsonb_strip_nulls(jsonb_build_object(
            'depends_on', to_jsonb(v_parents), 'rate_key', _tf_submit_one.rate_key,
            'concurrency_key', _tf_submit_one.concurrency_key, 'ordering_key', _tf_submit_one.ordering_key));
    END IF;
    IF _tf_submit_one.idempotency_key IS NOT NULL THEN
        v_fingerprint := taskforge._tf_fingerprint(_tf_submit_one.task_type, _tf_submit_one.payload, _tf_submit_one.queue,
            _tf_submit_one.priority::int, _tf_submit_one.max_attempts::int, _tf_submit_one.scheduled_at,
            _tf_submit_one.timeout_seconds, _tf_submit_one.delay_seconds, v_flow);
    END IF;

    LOOP
        IF NOT v_locked THEN
            -- The parents, locked in id order; their states as now committed decide the start.
            IF v_parents IS NOT NULL THEN
                SELECT count(*), count(*) FILTER (WHERE l.state <> 'SUCCEEDED'),
                       count(*) FILTER (WHERE l.state IN ('FAILED', 'CANCELLED'))
                  INTO v_found, v_pending, v_failed
                  FROM (SELECT t.task_id, t.state FROM taskforge.tasks t
                         WHERE t.task_id = ANY (v_parents) ORDER BY t.task_id FOR NO KEY UPDATE) AS l;
                IF v_found < cardinality(v_parents) THEN
                    SELECT min(d) INTO v_missing FROM unnest(v_parents) AS d
                     WHERE NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.task_id = d);
                    RAISE EXCEPTION USING ERRCODE = 'TF404',
                        MESSAGE = format('%sdepends_on: task %s does not exist', p, v_missing),
                        COLUMN = p || 'depends_on';
                END IF;
                UPDATE taskforge.tasks t SET has_children = true
                 WHERE t.task_id = ANY (v_parents) AND NOT t.has_children;
                v_state := CASE WHEN v_failed > 0 THEN 'CANCELLED' WHEN v_pending > 0 THEN 'BLOCKED' ELSE 'QUEUED' END;
            END IF;
            IF _tf_submit_one.ordering_key IS NOT NULL THEN
                INSERT INTO taskforge.ordering_keys AS o (ordering_key, created_at)
                VALUES (_tf_submit_one.ordering_key, _tf_submit_one.now)
                ON CONFLICT (ordering_key) DO NOTHING;
                PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = _tf_submit_one.ordering_key FOR UPDATE;
            END IF;
            IF _tf_submit_one.concurrency_key IS NOT NULL THEN
                INSERT INTO taskforge.concurrency_keys AS c (concurrency_key, created_at, updated_at)
                VALUES (_tf_submit_one.concurrency_key, _tf_submit_one.now, _tf_submit_one.now)
                ON CONFLICT (concurrency_key) DO NOTHING;
            END IF;
            v_locked := true;
        END IF;

        -- A key first: its row reserves it (the insert waits for a competing inserter of the
        -- same key and does nothing when the key is taken); the task takes the id drawn here.
        -- tasks is locked (as its INSERT below would) before the id is drawn: on the
        -- partitioned history a range is dropped only once every id in it is drawn, under a
        -- lock that waits for this transaction, so it sees this task (_tf_drop_partitions).
        IF _tf_submit_one.idempotency_key IS NOT NULL THEN
            LOCK TABLE taskforge.tasks IN ROW EXCLUSIVE MODE;
            INSERT INTO taskforge.idempotency_keys AS k (idempotency_key, task_id)
            VALUES (_tf_submit_one.idempotency_key, nextval('taskforge.tasks_task_id_seq'))
            ON CONFLICT (idempotency_key) DO NOTHING
            RETURNING k.task_id INTO v_new_id;
            IF v_new_id IS NULL THEN
                -- Taken by a committed task (or an earlier request of this transaction): a
                -- replay or a conflict.
                SELECT t.task_id, t.state, t.fingerprint INTO _tf_submit_one.task_id, _tf_submit_one.state, v_stored
                  FROM taskforge.idempotency_keys k JOIN taskforge.tasks t ON t.task_id = k.task_id
                 WHERE k.idempotency_key = _tf_submit_one.idempotency_key;
                IF FOUND THEN
                    IF v_stored IS DISTINCT FROM v_fingerprint THEN
                        RAISE EXCEPTION USING ERRCODE = 'TF409',
                            MESSAGE = format('%sidempotency_key: %s is already used by task %s with a different request',
                                p, quote_literal(left(_tf_submit_one.idempotency_key, 100)), _tf_submit_one.task_id),
                            COLUMN = p || 'idempotency_key',
                            HINT = 'Reuse a key only for exactly the same task_type, payload, queue, priority, max_attempts, '
                                || 'scheduled_at or delay_seconds, timeout_seconds, depends_on and flow keys.';
                    END IF;
                    _tf_submit_one.created := false;
                    _tf_submit_one.due_now := false;
                    RETURN;
                END IF;
                -- The holder was deleted (tf_prune) between our insert and our read: try again,
                -- once; a key row without its task after that is a broken invariant, not a race.
                IF v_retried THEN
                    PERFORM taskforge._tf_broken_invariant(format(
                        'idempotency key %s names task %s, which does not exist (tf_invariant_violations)',
                        quote_literal(left(_tf_submit_one.idempotency_key, 100)),
                        (SELECT k.task_id FROM taskforge.idempotency_keys k
                          WHERE k.idempotency_key = _tf_submit_one.idempotency_key)));
                END IF;
                v_retried := true;
                CONTINUE;
            END IF;
        END IF;

        INSERT INTO taskforge.tasks AS t
               (task_id, task_type, payload, queue, priority, max_attempts, state, scheduled_at,
                idempotency_key, fingerprint, timeout_seconds, notify_finished, traceparent,
                parents_pending, rate_key, concurrency_key, ordering_key, keyed,
                cancel_requested_at, cancel_reason, finished_at, created_at, updated_at)
        OVERRIDING SYSTEM VALUE
        VALUES (coalesce(v_new_id, nextval('taskforge.tasks_task_id_seq')), _tf_submit_one.task_type,
                _tf_submit_one.payload, _tf_submit_one.queue, _tf_submit_one.priority, _tf_submit_one.max_attempts, v_state, v_scheduled_at,
                _tf_submit_one.idempotency_key, v_fingerprint, v_timeout, _tf_submit_one.notify_finished,
                _tf_submit_one.traceparent, CASE WHEN v_state = 'BLOCKED' THEN v_pending ELSE 0 END,
                _tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key,
                coalesce(_tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key) IS NOT NULL,
                CASE WHEN v_state = 'CANCELLED' THEN _tf_submit_one.now END,
                CASE WHEN v_state = 'CANCELLED' THEN 'dependency_failed' END,
                CASE WHEN v_state = 'CANCELLED' THEN _tf_submit_one.now END,
                _tf_submit_one.now, _tf_submit_one.now)
        RETURNING t.task_id INTO _tf_submit_one.task_id;

        IF v_parents IS NOT NULL THEN
            INSERT INTO taskforge.task_dependencies (child_task_id, parent_task_id)
            SELECT _tf_submit_one.task_id, d FROM unnest(v_parents) AS d;
        END IF;
        _tf_submit_one.state := v_state;
        _tf_submit_one.created := true;
        _tf_submit_one.due_now := v_state = 'QUEUED' AND v_scheduled_at <= _tf_submit_one.now;
        RETURN;
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_submit_one(text, jsonb, text, numeric, numeric, timestamptz, text, timestamptz, text, boolean, double precision, double precision, boolean, text, bigint[], text, text, text) IS
    'Private: the per-request core of tf_submit, tf_submit_many and tf_enqueue_periodic (validate, insert or resolve the idempotency key; validate only for tf_schedule_periodic). No NOTIFY. Errors: TF400, TF409 with the argument prefixed.';
REVOKE ALL ON FUNCTION taskforge._tf_submit_one(
    text, jsonb, text, numeric, numeric, timestamptz, text, timestamptz, text, boolean, double precision,
    double precision, boolean, text, bigint[], text, text, text
) FROM PUBLIC;

-- >>> db/functions/_tf_task_row_ok.sql
-- taskforge._tf_task_row_ok(state text, attempt_count int, max_attempts int,
--     owner_worker_id uuid, lease_expires_at timestamptz, finished_at timestamptz,
--     idempotency_key text, fingerprint bytea, cancel_reason text,
--     cancel_requested_at timestamptz)
--   -> boolean                                                               (private helper)
--
-- Purpose:    the rules across the columns of one taskforge.tasks row, the body of its CHECK
--             constraint tasks_row_rules (db/schema/52_row_rules.sql). Each rule keeps its own
--             name, which a violation reports as the constraint:
--               tasks_attempts_within_budget       0 <= attempt_count <= max_attempts;
--               tasks_owner_iff_running            owner and lease present exactly while
--                                                  RUNNING (and then attempt_count >= 1);
--               tasks_finished_iff_terminal        finished_at set exactly in SUCCEEDED,
--                                                  FAILED, CANCELLED;
--               tasks_retrying_has_budget          RETRYING leaves attempt_count < max_attempts;
--               tasks_queued_has_budget            QUEUED leaves attempt_count < max_attempts;
--               tasks_fingerprint_iff_key          a fingerprint exactly with a key;
--               tasks_cancel_reason_needs_request  a cancel reason only with a cancel request.
--             As in any CHECK, a rule that evaluates to NULL holds.
-- Why a function: PostgreSQL 15 prepares the CHECK constraints of a table again for every
--             INSERT or UPDATE statement, parsing each one's stored expression text, whatever
--             columns the statement writes; a worker turn writes three times. Written out, the
--             seven rules of tasks and three of attempts were 10.7 KB of expression text, a
--             sixth of a one-task turn's CPU (docs/benchmarks.md, "The hot path in SQL"). A call
--             of this function is a short expression; PL/pgSQL keeps its compiled body for the
--             session, and the function is not inlined (a SQL function would be, its text
--             parsed again at each preparation).
-- search_path: no SET clause (it would cost a configuration save and restore on every row
--             written: +9 % CPU per task of a batch); instead the body names nothing through the
--             search_path: every operator is written OPERATOR(pg_catalog.x) and every type
--             pg_catalog.x, so a caller's search_path cannot change what it means
--             (db/tests/catalog/test_function_security.sql tries a hostile one).
-- Returns:    true when every rule holds.
-- Errors:     23514 check_violation naming the broken rule as the constraint (the first in the
--             order above), table taskforge.tasks.
-- Clock:      none.  Locks: none.
-- By hand:    harmless; IMMUTABLE (its result depends on its arguments only).
CREATE OR REPLACE FUNCTION taskforge._tf_task_row_ok(
    state text, attempt_count int, max_attempts int, owner_worker_id uuid,
    lease_expires_at timestamptz, finished_at timestamptz, idempotency_key text,
    fingerprint bytea, cancel_reason text, cancel_requested_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $fn$
DECLARE
    v_rule pg_catalog.text;
BEGIN
    v_rule := CASE
        WHEN (attempt_count OPERATOR(pg_catalog.>=) 0 AND attempt_count OPERATOR(pg_catalog.<=) max_attempts) IS FALSE
            THEN 'tasks_attempts_within_budget'
        WHEN ((state OPERATOR(pg_catalog.=) 'RUNNING' AND owner_worker_id IS NOT NULL AND lease_expires_at IS NOT NULL
               AND attempt_count OPERATOR(pg_catalog.>=) 1)
              OR (state OPERATOR(pg_catalog.<>) 'RUNNING' AND owner_worker_id IS NULL AND lease_expires_at IS NULL)) IS FALSE
            THEN 'tasks_owner_iff_running'
        WHEN ((finished_at IS NOT NULL)
              OPERATOR(pg_catalog.=) (state OPERATOR(pg_catalog.=) ANY ('{SUCCEEDED,FAILED,CANCELLED}'::pg_catalog.text[]))) IS FALSE
            THEN 'tasks_finished_iff_terminal'
        WHEN (state OPERATOR(pg_catalog.<>) 'RETRYING' OR attempt_count OPERATOR(pg_catalog.<) max_attempts) IS FALSE
            THEN 'tasks_retrying_has_budget'
        WHEN (state OPERATOR(pg_catalog.<>) 'QUEUED' OR attempt_count OPERATOR(pg_catalog.<) max_attempts) IS FALSE
            THEN 'tasks_queued_has_budget'
        WHEN ((idempotency_key IS NULL) OPERATOR(pg_catalog.=) (fingerprint IS NULL)) IS FALSE
            THEN 'tasks_fingerprint_iff_key'
        WHEN (cancel_reason IS NULL OR cancel_requested_at IS NOT NULL) IS FALSE
            THEN 'tasks_cancel_reason_needs_request'
    END;
    IF v_rule IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "tasks" violates check constraint "%"', v_rule
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule, SCHEMA = 'taskforge', TABLE = 'tasks';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_row_ok(text, int, int, uuid, timestamptz, timestamptz, text, bytea, text, timestamptz) IS
    'Private: the body of CHECK tasks_row_rules: true when every rule across the columns of a tasks row holds, else 23514 naming the broken rule.';
REVOKE ALL ON FUNCTION taskforge._tf_task_row_ok(
    text, int, int, uuid, timestamptz, timestamptz, text, bytea, text, timestamptz
) FROM PUBLIC;

-- >>> db/functions/_tf_task_state.sql
-- taskforge._tf_task_state(task_id bigint) -> text                           (private helper)
--
-- Purpose:    the committed state of a task, read without a lock: what a batch call reports for
--             an element whose row another transaction holds (busy), and how it tells busy from
--             not_found. A function, not a subquery, so that a statement pays for the lookup
--             only when it makes one (a subquery is prepared with every execution of the
--             statement, used or not).
-- Parameters: task_id  a task id.
-- Returns:    the task's state, or NULL when there is no such task.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_task_state(task_id bigint)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN (SELECT t.state FROM taskforge.tasks t WHERE t.task_id = _tf_task_state.task_id);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_state(bigint) IS
    'Private: a task''s committed state (NULL when there is no such task), read without a lock.';
REVOKE ALL ON FUNCTION taskforge._tf_task_state(bigint) FROM PUBLIC;

-- >>> db/functions/_tf_task_state_after.sql
-- taskforge._tf_task_state_after(outcome text, cancel_requested boolean, attempt_count int,
--                                max_attempts int) -> text                 (private helper)
--
-- Purpose:    the one home of the rule "what state does a task take when its current attempt
--             ends". Used by tf_finalize, the batch finalize (_tf_finalize_attempts) and
--             tf_recover, so the decision is written once:
--               succeeded      -> SUCCEEDED (the work happened, even if a cancel was requested)
--               cancelled      -> CANCELLED
--               any other outcome with a cancel request             -> CANCELLED
--               failed         -> FAILED (ordinary error: terminal)
--               retryable      -> RETRYING while attempt_count < max_attempts, else FAILED
--               lease_expired, timed_out
--                              -> QUEUED while attempt_count < max_attempts, else FAILED
--                                 (recovery: the attempt is over, no backoff applies)
-- Parameters: outcome           'succeeded' | 'failed' | 'retryable' | 'cancelled' | 'lease_expired'
--                               | 'timed_out'.
--             cancel_requested  tasks.cancel_requested_at IS NOT NULL.
--             attempt_count     the task's attempt count (the number of the attempt that ended).
--             max_attempts      the task's budget.
-- Returns:    'SUCCEEDED' | 'CANCELLED' | 'FAILED' | 'RETRYING' | 'QUEUED'; NULL for an unknown or NULL
--             outcome, whatever the other arguments (callers validate outcomes first).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling query (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_task_state_after(
    outcome text, cancel_requested boolean, attempt_count int, max_attempts int)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT CASE
        WHEN outcome = 'succeeded' THEN 'SUCCEEDED'
        WHEN outcome IS NULL OR outcome NOT IN ('cancelled', 'failed', 'retryable', 'lease_expired', 'timed_out') THEN NULL
        WHEN outcome = 'cancelled' OR cancel_requested THEN 'CANCELLED'
        WHEN outcome = 'failed' THEN 'FAILED'
        WHEN attempt_count < max_attempts THEN CASE outcome WHEN 'retryable' THEN 'RETRYING' ELSE 'QUEUED' END
        ELSE 'FAILED'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_state_after(text, boolean, int, int) IS
    'Private: the task state after its current attempt ends with an outcome (succeeded|failed|retryable|cancelled|lease_expired|timed_out), given a cancel request and the budget.';
REVOKE ALL ON FUNCTION taskforge._tf_task_state_after(text, boolean, int, int) FROM PUBLIC;

-- >>> db/functions/_tf_token_ok.sql
-- taskforge._tf_token_ok(task_id numeric, attempt_number numeric) -> boolean   (private helper)
--
-- Purpose:    the one home of the rule for a fencing token element of the batch functions: a
--             task id is a whole number within bigint, an attempt number a whole number from 1
--             to 2147483647. A plain SQL expression, inlined by the planner into its callers
--             (taskforge._tf_check_batch, taskforge._tf_valid_batch_of_one).
-- Parameters: task_id, attempt_number   as a caller passed them (numeric).
-- Returns:    true when both are valid; false or NULL (a NULL argument) otherwise.
-- Errors:     none (the checkers raise; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_token_ok(task_id numeric, attempt_number numeric)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT task_id BETWEEN -9223372036854775808 AND 9223372036854775807 AND task_id = trunc(task_id)
       AND attempt_number BETWEEN 1 AND 2147483647 AND attempt_number = trunc(attempt_number)
$fn$;

COMMENT ON FUNCTION taskforge._tf_token_ok(numeric, numeric) IS
    'Private: true when a (task_id, attempt_number) element is a valid fencing token (whole numbers within bigint and 1..2147483647).';
REVOKE ALL ON FUNCTION taskforge._tf_token_ok(numeric, numeric) FROM PUBLIC;

-- >>> db/functions/_tf_traceparent_ok.sql
-- taskforge._tf_traceparent_ok(value text) -> boolean                  (private helper)
--
-- Purpose:    the one home of the trace context rule: a W3C Trace Context `traceparent` header
--             value (https://www.w3.org/TR/trace-context/#traceparent-header) as tf_submit
--             stores it, version-trace_id-parent_id-flags in lower-case hex,
--               ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$
--             e.g. '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', where the
--             version is not 'ff' and neither the trace id nor the parent (span) id is all
--             zeros (the invalid values of the specification). Used by the validation of
--             tf_submit and tf_submit_many (taskforge._tf_submit_one) and by the domain
--             taskforge.traceparent of tasks.traceparent (db/schema/50_name_rules.sql).
--             A plain SQL expression, inlined by the planner into its callers.
-- Parameters: value  the header value, or NULL.
-- Returns:    true when valid, false when not, NULL for NULL.
-- Errors:     none (the validator raises; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_traceparent_ok(value text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
-- No SET clause: inlined into the validator and the domain constraint.
AS $fn$
    SELECT value ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       AND left(value, 2) <> 'ff'
       AND substr(value, 4, 32) <> '00000000000000000000000000000000'
       AND substr(value, 37, 16) <> '0000000000000000'
$fn$;

COMMENT ON FUNCTION taskforge._tf_traceparent_ok(text) IS
    'Private: true when a text is a valid W3C traceparent (lower-case hex vv-trace_id-parent_id-flags, version not ff, ids not all zeros).';
REVOKE ALL ON FUNCTION taskforge._tf_traceparent_ok(text) FROM PUBLIC;

-- >>> db/functions/_tf_turn.sql
-- taskforge._tf_turn(worker_id uuid, task_ids bigint[], attempt_numbers int[], outcomes text[],
--     results jsonb[], errors jsonb[], claim_ids bigint[], lease_seconds double precision,
--     now timestamptz)
--   -> TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
--            reason text, task_type text, payload jsonb, queue text, priority int,
--            max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
--            traceparent text)                                          (private helper)
--
-- Purpose:    the one write path of the hot transitions: end the attempts a worker finished
--             (RUNNING -> SUCCEEDED | FAILED | RETRYING | CANCELLED) and start attempts of tasks
--             it picked (QUEUED -> RUNNING under a lease, attempt number + 1, a new RUNNING
--             attempt row), all in ONE statement: one UPDATE of tasks, one UPDATE and one
--             INSERT of attempts, whatever the number of tasks. tf_finalize, tf_finalize_many,
--             tf_claim and tf_finalize_and_claim all write through here (a single task is a
--             batch of one). Per finalize element: the guard (taskforge._tf_guard_batch: busy,
--             not_found, then tf_finalize's not_running | stale_attempt | not_owner | timed_out
--             | lease_expired), the outcome rules (taskforge._tf_task_state_after,
--             _tf_attempt_state_after), backoff from the task type's policy (tf_backoff) for
--             a retry, the result stored on success, the error capped (_tf_cap_error) otherwise.
--             Per claimed task: the lease is now + lease_seconds but never past the attempt's
--             deadline (now + the task's timeout_seconds, kept in tasks.deadline_at and
--             attempts.deadline_at).
-- Parameters: worker_id        the worker (validated by the caller; registered when claiming).
--             task_ids, attempt_numbers, outcomes, results, errors
--                              the finalize elements, validated by the caller
--                              (taskforge._tf_check_batch, or tf_finalize's own checks);
--                              empty arrays for none. results and errors may be NULL.
--             claim_ids        tasks the caller picked and locked in this transaction, in
--                              claim order (taskforge._tf_claim_pick), or empty/NULL for none.
--             lease_seconds    the lease of claimed tasks, validated by the caller.
--             now              the caller's clock_timestamp() (below).
-- Returns:    one 'finalized' row per finalize element in input order (accepted, the task
--             state after the call, or as last committed when refused, and the reason, NULL when
--             accepted), then one 'claimed' row per claimed task in claim order (the claim
--             columns of tf_claim, traceparent last), sorted by priority DESC, created_at: the
--             claim order itself except where priority aging chose the set (the rows of one call
--             then come by their own priority; which tasks were claimed is the pick's choice).
--             A sort, not the pick's array order: finding each row's position in that array
--             would cost n^2 comparisons (28 ms for a batch of 1000). The kind column says which.
-- Errors:     XX000 (taskforge._tf_broken_invariant) when a task passed the guard but its
--             attempt row was not RUNNING (see tf_invariant_violations); the statement, like any
--             error, writes nothing.
-- Locks:      FOR UPDATE SKIP LOCKED on the finalize elements' tasks rows (a row another
--             transaction holds is reported busy, never waited for; rows the caller locked
--             already are its own), then the rows it writes.
-- Plans:      two statements (a third sorts the accepted elements of a batch of more than one),
--             each with one cached generic plan. The first locks and judges the
--             finalize elements: each element drives its own lookup of its task (a LATERAL
--             lookup by primary key), so the plan cannot start from the table; it aggregates
--             nothing (ARRAY() in input order: an aggregate's set-up cost a one-task turn 8 %).
--             The second writes, and joins nothing: each UPDATE names its rows by id
--             (task_id = ANY (...), through the primary key) and finds each row's verdict once,
--             by binary search in id-sorted arrays (width_bucket), in a sub-select that sets all
--             its columns (SET (...) = (SELECT ...): one lookup per row, not one per column), so
--             its cost grows as n log n with the batch, whatever plan a session cached while the
--             tables were small. Both pinned with SET
--             enable_seqscan/hashjoin/mergejoin = off (jit = off: those settings inflate plan
--             costs past jit_above_cost).
-- Notify:     none of its own; the row trigger tasks_notify_finished sends taskforge_finished for
--             a task submitted with notify_finished that this statement ends
--             (taskforge._tf_notify_finished).
-- Clock:      now, read by the caller once nothing more can be waited for (after tf_finalize's
--             row lock; at the start of a call that only skips locked rows), and shared with
--             its pick (taskforge._tf_claim_pick) so that both judge a lease alike: guard,
--             finish time, backoff start, lease start and attempt start.
-- By hand:    use the public functions.
CREATE OR REPLACE FUNCTION taskforge._tf_turn(
    worker_id uuid,
    task_ids bigint[],
    attempt_numbers int[],
    outcomes text[],
    results jsonb[],
    errors jsonb[],
    claim_ids bigint[],
    lease_seconds double precision,
    now timestamptz)
RETURNS TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
              reason text, task_type text, payload jsonb, queue text, priority int,
              max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
              traceparent text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_turn.now;
    v_lease timestamptz := _tf_turn.now + make_interval(secs => _tf_turn.lease_seconds);
    v_n int := coalesce(cardinality(_tf_turn.task_ids), 0);
    -- The verdict on every finalize element, in input order (the answer).
    v_all taskforge._tf_verdict[];
    -- The accepted elements' verdicts and task ids, sorted by task id alike: a row finds its
    -- element by binary search (taskforge._tf_sorted_at).
    v_ok taskforge._tf_verdict[];
    v_ok_ids bigint[] := '{}';
    -- The task ids this turn writes: the accepted elements' and the claimed ones.
    v_touched bigint[] := _tf_turn.claim_ids;
BEGIN
    IF v_n = 0 AND coalesce(cardinality(_tf_turn.claim_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF v_n > 0 THEN
        -- Lock what is free and judge each element: a row another transaction holds is busy,
        -- never waited for (its state as last committed); a missing one not_found
        -- (taskforge._tf_guard_batch). Each element drives its own lookup (LATERAL).
        -- No aggregate: the elements come in input order (the ordinality of the unnest, kept
        -- by the nested loop), so ARRAY() needs no sort.
        v_all := ARRAY(
                SELECT ROW(g.task_id, g.attempt_number, g.reason, coalesce(g.state, taskforge._tf_task_state(g.task_id)),
                           taskforge._tf_task_state_after(g.outcome, g.cancel_requested_at IS NOT NULL,
                                                          g.attempt_count, g.max_attempts),
                           g.outcome,
                           CASE WHEN g.outcome = 'succeeded' THEN g.result END,
                           CASE WHEN g.reason IS NULL AND g.outcome <> 'succeeded'
                                THEN taskforge._tf_cap_error(g.error) END)::taskforge._tf_verdict
                  FROM (SELECT r.ord, r.task_id, r.attempt_number, r.outcome, r.result, r.error, t.state,
                               t.cancel_requested_at, t.attempt_count, t.max_attempts,
                               taskforge._tf_guard_batch(t.task_id IS NOT NULL, taskforge._tf_task_state(r.task_id) IS NOT NULL,
                                                         t.state, t.attempt_count, t.owner_worker_id, t.deadline_at,
                                                         t.lease_expires_at, _tf_turn.worker_id, r.attempt_number, v_now)
                                   AS reason
                          FROM unnest(_tf_turn.task_ids, _tf_turn.attempt_numbers, _tf_turn.outcomes,
                                      _tf_turn.results, _tf_turn.errors)
                               WITH ORDINALITY AS r(task_id, attempt_number, outcome, result, error, ord)
                          LEFT JOIN LATERAL (
                              SELECT l.task_id, l.state, l.attempt_count, l.max_attempts, l.owner_worker_id,
                                     l.deadline_at, l.lease_expires_at, l.cancel_requested_at
                                FROM taskforge.tasks l
                               WHERE l.task_id = r.task_id
                                 FOR UPDATE SKIP LOCKED) AS t ON true) AS g
                 ORDER BY g.ord);
        -- The accepted elements, sorted by task id for the binary search.
        IF v_n = 1 THEN
            IF (v_all[1]).reason IS NULL THEN
                v_ok := v_all;
                v_ok_ids := ARRAY[(v_all[1]).task_id];
            END IF;
        ELSE
            SELECT array_agg(ROW(v.*)::taskforge._tf_verdict ORDER BY v.task_id), coalesce(array_agg(v.task_id ORDER BY v.task_id), '{}')
              INTO v_ok, v_ok_ids
              FROM unnest(v_all) AS v
             WHERE v.reason IS NULL;
        END IF;
        v_touched := v_ok_ids || _tf_turn.claim_ids;
    END IF;

    RETURN QUERY
    WITH moved AS (
        -- Every written tasks row, by id. An accepted element's row takes its verdict (found by
        -- binary search); any other is a claimed task starting (it may also have been named,
        -- and refused, in the batch: a QUEUED task the same call claims).
        UPDATE taskforge.tasks t
           SET (state, owner_worker_id, lease_expires_at, deadline_at, attempt_count, scheduled_at, result,
                last_error, finished_at, updated_at) =
               (SELECT coalesce((e.v).new_state, 'RUNNING'),
                       CASE WHEN (e.v).task_id IS NULL THEN _tf_turn.worker_id END,
                       CASE WHEN (e.v).task_id IS NULL
                            THEN least(v_lease, v_now + make_interval(secs => t.timeout_seconds)) END,
                       CASE WHEN (e.v).task_id IS NULL THEN v_now + make_interval(secs => t.timeout_seconds) END,
                       CASE WHEN (e.v).task_id IS NULL THEN t.attempt_count + 1 ELSE t.attempt_count END,
                       CASE WHEN (e.v).new_state = 'RETRYING'
                            THEN v_now + make_interval(secs => taskforge._tf_retry_delay(t.task_type, t.attempt_count))
                            ELSE t.scheduled_at END,
                       CASE WHEN (e.v).outcome = 'succeeded' THEN (e.v).result ELSE t.result END,
                       CASE WHEN (e.v).outcome <> 'succeeded' THEN (e.v).error ELSE t.last_error END,
                       CASE WHEN (e.v).new_state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN v_now END,
                       v_now
                  -- The row's verdict, looked up once (OFFSET 0 keeps the lookup from being
                  -- copied into each use); NULL for a claimed task.
                  FROM (SELECT v_ok[taskforge._tf_sorted_at(v_ok_ids, t.task_id)] AS v OFFSET 0) AS e)
         WHERE t.task_id = ANY (v_touched)
        RETURNING t.task_id, t.state, t.attempt_count, t.task_type, t.payload, t.queue, t.priority, t.max_attempts,
                  t.created_at, t.lease_expires_at, t.deadline_at, t.timeout_seconds, t.traceparent
    ), ended AS (
        -- The RUNNING attempt of each accepted element.
        UPDATE taskforge.attempts a
           SET (state, outcome, finished_at, result, error) =
               (SELECT taskforge._tf_attempt_state_after((e.v).outcome), (e.v).outcome, v_now, (e.v).result, (e.v).error
                  FROM (SELECT v_ok[taskforge._tf_sorted_at(v_ok_ids, a.task_id)] AS v OFFSET 0) AS e)
         WHERE a.task_id = ANY (v_ok_ids) AND a.state = 'RUNNING'
           AND a.attempt_number = (v_ok[taskforge._tf_sorted_at(v_ok_ids, a.task_id)]).attempt_number
        RETURNING a.task_id
    ), started AS (
        INSERT INTO taskforge.attempts
               (task_id, attempt_number, worker_id, state, started_at, lease_expires_at, deadline_at)
        SELECT m.task_id, m.attempt_count, _tf_turn.worker_id, 'RUNNING', v_now, m.lease_expires_at, m.deadline_at
          FROM moved m
         WHERE m.state = 'RUNNING'
    )
    SELECT o.kind, o.task_id, o.attempt_number, o.accepted, o.task_state, o.reason, o.task_type, o.payload,
           o.queue, o.priority, o.max_attempts, o.lease_expires_at, o.timeout_seconds, o.traceparent
      FROM (
        -- The finalize elements in input order.
        SELECT 1 AS part, f.ord, NULL::timestamptz AS created_at, 'finalized'::text AS kind, f.task_id,
               f.attempt_number, f.reason IS NULL AS accepted,
               CASE WHEN f.reason IS NULL THEN f.new_state ELSE f.old_state END AS task_state,
               -- An accepted element whose RUNNING attempt was not ended: a broken invariant
               -- (looked for only when the counts differ).
               CASE WHEN f.reason IS NOT NULL OR cardinality(ARRAY(SELECT d.task_id FROM ended d)) = cardinality(v_ok_ids) THEN f.reason
                    WHEN NOT EXISTS (SELECT 1 FROM ended d WHERE d.task_id = f.task_id)
                    THEN taskforge._tf_broken_invariant(format(
                        'task %s is RUNNING under attempt %s but that attempt row is not RUNNING (see tf_invariant_violations)',
                        f.task_id, f.attempt_number))
               END AS reason,
               NULL::text AS task_type, NULL::jsonb AS payload, NULL::text AS queue, NULL::int AS priority,
               NULL::int AS max_attempts, NULL::timestamptz AS lease_expires_at,
               NULL::double precision AS timeout_seconds, NULL::text AS traceparent
          FROM unnest(v_all) WITH ORDINALITY AS f(task_id, attempt_number, reason, old_state, new_state, outcome,
                                                   result, error, ord)
        UNION ALL
        -- The claimed tasks, in claim order.
        SELECT 2, m.task_id, m.created_at, 'claimed', m.task_id, m.attempt_count, NULL, NULL, NULL,
               m.task_type, m.payload::jsonb, m.queue::text, m.priority::int, m.max_attempts::int, m.lease_expires_at,
               m.timeout_seconds, m.traceparent::text
          FROM moved m
         WHERE m.state = 'RUNNING'
      ) AS o
     ORDER BY o.part, o.priority DESC, o.created_at, o.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_turn(uuid, bigint[], int[], text[], jsonb[], jsonb[], bigint[], double precision, timestamptz) IS
    'Private: the one write path of finalize and claim: ends the given attempts (guard per element, SKIP LOCKED: busy) and starts attempts of the picked tasks, in one statement. Rows: finalized (input order), then claimed (claim order).';
REVOKE ALL ON FUNCTION taskforge._tf_turn(
    uuid, bigint[], int[], text[], jsonb[], jsonb[], bigint[], double precision, timestamptz
) FROM PUBLIC;

-- >>> db/functions/_tf_unknown_worker.sql
-- taskforge._tf_unknown_worker(worker_id uuid) -> void                  (private helper)
--
-- Purpose:    the one "no registered worker" error, for tf_heartbeat and the claim, raised when
--             worker_id names no worker or a deregistered one.
-- Parameters: worker_id  the id that was not found.
-- Returns:    never; always raises.
-- Errors:     TF404 'worker_id: no registered worker <id> (unknown or deregistered)', COLUMN worker_id.
-- Locks:      none.  Clock: none.  By hand: harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_unknown_worker(worker_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call with constant arguments
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'TF404',
        MESSAGE = format('worker_id: no registered worker %s (unknown or deregistered)', worker_id),
        COLUMN = 'worker_id';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_unknown_worker(uuid) IS
    'Private: raises TF404 "worker_id: no registered worker <id> (unknown or deregistered)".';
REVOKE ALL ON FUNCTION taskforge._tf_unknown_worker(uuid) FROM PUBLIC;

-- >>> db/functions/_tf_valid_batch_of_one.sql
-- taskforge._tf_valid_batch_of_one(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[], errors jsonb[], finalize boolean) -> boolean
--                                                                          (private helper)
--
-- Purpose:    the fast path of batch validation for the commonest call, one element (a
--             one-slot worker's turn): true when the arguments are certainly valid, so the
--             caller may skip taskforge._tf_check_batch, which it calls otherwise to raise the
--             precise error. The element rules are taskforge._tf_token_ok and
--             taskforge._tf_outcome_ok, shared with _tf_check_batch; arrays may have any lower
--             bound. A plain SQL expression, inlined into the caller's IF.
-- Parameters: as _tf_check_batch.
-- Returns:    true for a valid batch of one element; false or NULL for anything else (not
--             necessarily invalid: a larger batch, which _tf_check_batch then reads).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_valid_batch_of_one(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[],
    errors jsonb[],
    finalize boolean)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT worker_id IS NOT NULL
       AND cardinality(task_ids) = 1 AND array_ndims(task_ids) = 1
       AND cardinality(attempt_numbers) = 1 AND array_ndims(attempt_numbers) = 1
       AND taskforge._tf_token_ok(task_ids[array_lower(task_ids, 1)],
                                  attempt_numbers[array_lower(attempt_numbers, 1)])
       AND (NOT finalize
            OR (cardinality(outcomes) = 1 AND array_ndims(outcomes) = 1
                AND (results IS NULL OR (cardinality(results) = 1 AND array_ndims(results) = 1))
                AND (errors IS NULL OR (cardinality(errors) = 1 AND array_ndims(errors) = 1))
                AND taskforge._tf_outcome_ok(outcomes[array_lower(outcomes, 1)],
                                            results[array_lower(results, 1)])))
$fn$;

COMMENT ON FUNCTION taskforge._tf_valid_batch_of_one(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean) IS
    'Private: true when a batch call holds one certainly valid element, so taskforge._tf_check_batch may be skipped.';
REVOKE ALL ON FUNCTION taskforge._tf_valid_batch_of_one(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean
) FROM PUBLIC;

-- >>> db/functions/_tf_wake_ordering_key.sql
-- taskforge._tf_wake_ordering_key() -> trigger                         (private helper)
--
-- Purpose:    the wake-up of an ordering key's next task (docs/flow-control.md): when a task
--             with an ordering key ends (its finished_at is set: SUCCEEDED, FAILED or
--             CANCELLED, by whatever path), the key's next task may start, so if the key's
--             lowest unfinished task comes after it and is QUEUED and due, the same transaction
--             sends the usual wake-up of that task's queue, pg_notify('taskforge', queue),
--             delivered when it commits. Without it a worker whose claim came back short (the
--             next task of a key cannot be claimed in the call that finalizes its predecessor:
--             the claim picks first) waited for its poll interval, so ordering keys ran at a
--             few tasks a poll. A task of the key ending while an earlier one is unfinished,
--             or a next task that is BLOCKED, RETRYING or not due yet, sends nothing (the
--             release of its parents, tf_promote and the submit send their own).
-- Fires:      as the row trigger tasks_wake_ordering_key (db/schema/55_triggers.sql): AFTER
--             UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.ordering_key IS NOT NULL
--             AND NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL). Why a trigger: the
--             terminal states are written by taskforge._tf_turn, tf_recover, tf_cancel and the
--             dependency cascade; the table is on every such path. Tasks without an ordering
--             key pay the WHEN test and never call this.
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none of its own.
-- Locks:      none of its own; a NOTIFY serialises commits across the cluster (at commit), a
--             price paid by the transactions that end a task with an ordering key only.
-- Clock:      NEW.updated_at, the now of the statement that ended the task, for "due".
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_wake_ordering_key()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_next record;
BEGIN
    -- The key's head now (tasks_ordering_key_idx: an equality on the key).
    SELECT t.task_id, t.state, t.queue, t.scheduled_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.ordering_key = NEW.ordering_key AND t.finished_at IS NULL
     ORDER BY t.task_id
     LIMIT 1;
    IF v_next.task_id > NEW.task_id AND v_next.state = 'QUEUED' AND v_next.scheduled_at <= NEW.updated_at THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[v_next.queue::text]);
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_wake_ordering_key() IS
    'Private: row trigger (tasks_wake_ordering_key) that wakes the queue of an ordering key''s next task when a task of the key ends.';
REVOKE ALL ON FUNCTION taskforge._tf_wake_ordering_key() FROM PUBLIC;

-- >>> db/functions/tf_backoff.sql
-- taskforge.tf_backoff(failed_attempt numeric, base_seconds double precision DEFAULT 2,
--                      cap_seconds double precision DEFAULT 300, jitter double precision DEFAULT 0.2)
--   -> double precision
--
-- Purpose:    how long a task waits after its failed attempt number failed_attempt before it
--             may run again:  min(cap, base * 2^(failed_attempt - 1) * (1 + U(-jitter, +jitter))).
--             Never negative, never above cap, no overflow for any failed_attempt up to
--             2^31 - 1 (large exponents are compared in log space instead of being computed).
-- Parameters: failed_attempt  a whole number 1..2147483647 (the attempt number that just failed;
--                             declared numeric, so any number a caller writes gets TF400).
--             base_seconds    0..86400 seconds.   cap_seconds  0..86400 seconds.
--             jitter          0..1, the relative spread of the uniform random factor.
-- Returns:    seconds (double precision).
-- Errors:     TF400 naming the argument for NULL, non-finite or out-of-range input.
-- Locks:      none.  Clock: none (uses random(), so VOLATILE).
-- By hand:    yes; it reads and writes nothing.
CREATE OR REPLACE FUNCTION taskforge.tf_backoff(
    failed_attempt numeric,
    base_seconds double precision DEFAULT 2,
    cap_seconds double precision DEFAULT 300,
    jitter double precision DEFAULT 0.2)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
    v_factor double precision;
    v_exponent int;
BEGIN
    IF failed_attempt IS NULL OR failed_attempt NOT BETWEEN 1 AND 2147483647 OR failed_attempt <> trunc(failed_attempt) THEN
        PERFORM taskforge._tf_check_int('failed_attempt', failed_attempt, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_seconds('base_seconds', base_seconds, 0, 86400);
    PERFORM taskforge._tf_check_seconds('cap_seconds', cap_seconds, 0, 86400);
    IF jitter IS NULL OR jitter = 'NaN'::float8 OR jitter < 0 OR jitter > 1 THEN
        PERFORM taskforge._tf_invalid('jitter', format('must be between 0 and 1, got %s', coalesce(jitter::text, 'NULL')));
    END IF;

    v_factor := 1 + jitter * (2 * random() - 1);          -- in [1 - jitter, 1 + jitter]
    IF base_seconds = 0 OR cap_seconds = 0 OR v_factor <= 0 THEN
        RETURN 0;
    END IF;
    v_exponent := failed_attempt - 1;
    -- base * 2^e * factor >= cap  <=>  ln(base) + e*ln(2) + ln(factor) >= ln(cap): no overflow.
    IF ln(base_seconds) + v_exponent * ln(2::float8) + ln(v_factor) >= ln(cap_seconds) THEN
        RETURN cap_seconds;
    END IF;
    -- Below the cap, so 2^e is small enough to compute exactly.
    RETURN least(cap_seconds, base_seconds * power(2::float8, v_exponent) * v_factor);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision) IS
    'Retry delay in seconds after failed attempt n: min(cap, base*2^(n-1)*(1+U(-jitter,+jitter))); never negative, never above cap, no overflow. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision)
    TO taskforge_worker, taskforge_scheduler, taskforge_client;

-- >>> db/functions/tf_cancel.sql
-- taskforge.tf_cancel(task_id numeric, reason text DEFAULT NULL)
--   -> TABLE(task_state text, cancel_requested boolean)
--
-- Purpose:    stop a task.
--               BLOCKED / QUEUED / RETRYING -> CANCELLED now (it never runs again); the
--                                     BLOCKED descendants of a task that has children end
--                                     CANCELLED too, cancel_reason 'dependency_failed'
--                                     (taskforge._tf_release_children).
--               RUNNING            -> cancel requested: the task keeps running; tf_renew reports
--                                     cancel_requested = true to its worker; at tf_finalize a
--                                     success stays SUCCEEDED (the work happened) and any other
--                                     outcome ends CANCELLED, never RETRYING; if the lease
--                                     expires instead, tf_recover ends it CANCELLED.
--               SUCCEEDED / FAILED / CANCELLED -> returned unchanged.
--             Handlers are never pre-empted: cancellation of running work is cooperative.
-- Parameters: task_id  a whole number within bigint (declared numeric: any number a caller
--             writes gets TF400 naming it, not 42883);
--             reason  free text (at most 1,000 characters kept) or NULL.
-- Returns:    one row: the state after the call and whether a cancel has been requested.
-- Errors:     TF400 task_id NULL or not a whole number within bigint; TF404 no such task.
-- Locks:      the tasks row FOR UPDATE.
-- Notify:     when it ends a BLOCKED, QUEUED or RETRYING task submitted with notify_finished:
--             pg_notify('taskforge_finished', task_id), on commit (the row trigger of
--             taskforge._tf_notify_finished). A cancel request on a RUNNING task notifies
--             nothing until the task ends.
-- Clock:      clock_timestamp() at entry.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_cancel(task_id numeric, reason text DEFAULT NULL)
RETURNS TABLE(task_state text, cancel_requested boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_now timestamptz := clock_timestamp();
    v_task taskforge.tasks%ROWTYPE;
    v_reason text := left(tf_cancel.reason, 1000);
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_cancel.task_id);
    v_task_id := tf_cancel.task_id;  -- checked: a whole number within bigint
    v_task := taskforge._tf_lock_task(v_task_id);

    IF v_task.state IN ('BLOCKED', 'QUEUED', 'RETRYING') THEN
        UPDATE taskforge.tasks t
           SET state = 'CANCELLED', parents_pending = 0, cancel_requested_at = v_now, cancel_reason = v_reason,
               finished_at = v_now, updated_at = v_now
         WHERE t.task_id = v_task_id;
        RETURN QUERY SELECT 'CANCELLED'::text, true;
    ELSIF v_task.state = 'RUNNING' THEN
        IF v_task.cancel_requested_at IS NULL THEN
            UPDATE taskforge.tasks t
               SET cancel_requested_at = v_now, cancel_reason = v_reason, updated_at = v_now
             WHERE t.task_id = v_task_id;
        END IF;
        RETURN QUERY SELECT 'RUNNING'::text, true;
    ELSE
        RETURN QUERY SELECT v_task.state::text, v_task.cancel_requested_at IS NOT NULL;
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_cancel(numeric, text) IS
    'Cancel a task: BLOCKED/QUEUED/RETRYING -> CANCELLED now (BLOCKED descendants too, dependency_failed); RUNNING -> cancel requested (honoured at finalize/recover); terminal unchanged. Ending a task submitted with notify_finished sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_cancel(numeric, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_cancel(numeric, text) TO taskforge_client;

-- >>> db/functions/tf_claim.sql
-- taskforge.tf_claim(worker_id uuid, queues text[] DEFAULT NULL, lease_seconds double precision DEFAULT 30,
--     max_tasks numeric DEFAULT 1, task_types text[] DEFAULT NULL)
--   -> TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
--            priority int, max_attempts int, lease_expires_at timestamptz,
--            timeout_seconds double precision, traceparent text)
--
-- Purpose:    take up to max_tasks due QUEUED tasks for one worker. For each claimed task, in one
--             short transaction: state RUNNING, owner, lease, attempt number + 1 and the RUNNING
--             attempt row. Candidates: state QUEUED, scheduled_at <= now, attempts remaining,
--             in one of queues (NULL = any) and of one of task_types (NULL = any), taken in the
--             order priority DESC, created_at, task_id. Priority chooses candidates; it is not
--             strict FIFO or fairness: a locked higher-priority task is skipped, not waited for.
-- Parameters: worker_id      a registered, not deregistered worker.
--             queues         text[] of queue names, or NULL for any queue.
--             task_types     text[] of task type names, or NULL for any type.
--                            (An empty array matches nothing; a NULL or malformed element is TF400.)
--             lease_seconds  0 < s <= 86400 seconds: the lease granted from now.
--             max_tasks      whole number 1..1000 (numeric: any number reaches the check).
-- Returns:    0..max_tasks rows in claim order; zero rows when nothing is eligible.
--             attempt_number is the new attempt's number: keep it with worker_id for renew
--             and finalize (together they are the fencing token). timeout_seconds (appended
--             to the first version) is the attempt's time limit from now, NULL for none: no
--             lease is granted past it, and recovery then records the attempt timed_out.
--             traceparent (appended last) is the W3C trace context given to tf_submit, or NULL:
--             the parent of the span a worker runs the attempt in.
-- Errors:     TF400 naming the argument (nothing claimed); TF404 unknown or deregistered worker.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen tasks rows (rows locked by other claimers
--             or by a finalize are skipped, never waited for); inserts attempt rows.
-- Plans:      one cached generic plan per filter shape, re-planned only while delayed tasks
--             exist (taskforge._tf_claim_pick, which chooses and locks the tasks, explains why);
--             the writes are taskforge._tf_turn's one statement, the path tf_finalize_and_claim
--             takes too.
-- Clock:      clock_timestamp() once at entry: due test, lease start and attempt start.
-- By hand:    only as a registered worker that will renew or finalize what it takes; otherwise
--             the tasks wait for their leases to expire.
CREATE OR REPLACE FUNCTION taskforge.tf_claim(
    worker_id uuid,
    queues text[] DEFAULT NULL,
    lease_seconds double precision DEFAULT 30,
    max_tasks numeric DEFAULT 1,
    task_types text[] DEFAULT NULL)
RETURNS TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
              priority int, max_attempts int, lease_expires_at timestamptz,
              timeout_seconds double precision, traceparent text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz;
BEGIN
    IF tf_claim.max_tasks IS NULL OR tf_claim.max_tasks NOT BETWEEN 1 AND 1000
       OR tf_claim.max_tasks <> trunc(tf_claim.max_tasks) THEN
        PERFORM taskforge._tf_check_int('max_tasks', tf_claim.max_tasks, 1, 1000);
    END IF;
    v_now := clock_timestamp();
    RETURN QUERY
    SELECT c.task_id, c.attempt_number, c.task_type, c.payload, c.queue, c.priority, c.max_attempts,
           c.lease_expires_at, c.timeout_seconds, c.traceparent
      FROM taskforge._tf_turn(tf_claim.worker_id, '{}', '{}', '{}', NULL, NULL,
                              taskforge._tf_claim_pick(tf_claim.worker_id, tf_claim.queues, tf_claim.lease_seconds,
                                                       tf_claim.max_tasks::int, tf_claim.task_types, v_now),
                              tf_claim.lease_seconds, v_now) AS c;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) IS
    'Claim up to max_tasks due QUEUED tasks (priority DESC, created_at, task_id; FOR UPDATE SKIP LOCKED): RUNNING + lease + new RUNNING attempt, atomically. Zero rows when nothing is eligible. Rows end with timeout_seconds and traceparent (the submitter''s trace context). Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) TO taskforge_worker;

-- >>> db/functions/tf_deregister_worker.sql
-- taskforge.tf_deregister_worker(worker_id uuid) -> void
--
-- Purpose:    mark a worker process as stopped (graceful shutdown). Its row and the attempts
--             that name it stay (until retention: tf_prune, then tf_prune_workers). Tasks it
--             still owns are not touched: their leases run out and tf_recover requeues them,
--             exactly as after a crash. Calling it twice is harmless.
-- Parameters: worker_id  from tf_register_worker.
-- Returns:    nothing.
-- Errors:     TF400 worker_id NULL; TF404 unknown worker.
-- Locks:      the workers row (UPDATE).
-- Clock:      clock_timestamp() for stopped_at.
-- By hand:    yes; the worker can no longer claim or heartbeat afterwards.
CREATE OR REPLACE FUNCTION taskforge.tf_deregister_worker(worker_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    IF tf_deregister_worker.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    UPDATE taskforge.workers w
       SET stopped_at = coalesce(w.stopped_at, greatest(v_now, w.last_heartbeat_at))
     WHERE w.worker_id = tf_deregister_worker.worker_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404',
            MESSAGE = format('worker_id: no worker %s', tf_deregister_worker.worker_id),
            COLUMN = 'worker_id';
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_deregister_worker(uuid) IS
    'Mark a worker process stopped; owned tasks are left to lease expiry and tf_recover. Idempotent. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_deregister_worker(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_deregister_worker(uuid) TO taskforge_worker;

-- >>> db/functions/tf_enqueue_periodic.sql
-- taskforge.tf_enqueue_periodic(max_tasks numeric DEFAULT 1000)
--   -> TABLE(enqueued int, names text[], ticks timestamptz[], task_ids bigint[],
--            next_fire_at timestamptz)
--
-- Purpose:    enqueue the due ticks of periodic schedules (tf_schedule_periodic); the scheduler
--             calls it on every pass and sleeps until next_fire_at.
--             For each schedule whose next_fire_at <= now (earliest first, at most max_tasks;
--             taskforge._tf_enqueue_tick):
--               1. the tick to enqueue is the LATEST tick <= now (catch-up policy: ticks missed
--                  while no scheduler ran are not replayed one by one; the schedule fires once,
--                  for its most recent tick; taskforge._tf_cron_latest);
--               2. one task is submitted through tf_submit's own rules
--                  (taskforge._tf_submit_one) with scheduled_at = the tick and the idempotency
--                  key 'periodic:<name>:<tick in UTC, YYYY-MM-DDTHH:MI:SSZ>', so a tick can
--                  never create a second task, even if it is handled again;
--               3. last_fire_at, last_task_id and next_fire_at (the first tick after now) are
--                  written in the same transaction.
--             Exactly once with many schedulers: due rows are locked FOR UPDATE SKIP LOCKED, so
--             concurrent callers split the schedules and a tick is handled by one of them; a
--             row advanced by another caller no longer qualifies when it is locked; and the
--             key makes a repeated tick a replay of the same task.
--             A key already held by a different request (a task submitted by hand with a
--             'periodic:' key) counts as that tick's task: a WARNING is raised, the holder's
--             id is reported and the schedule moves on.
--             Bad rows: one schedule that cannot be enqueued never stops the others. The due
--             schedules are handled in one subtransaction (fast path); when it raises an error
--             about a row (taskforge._tf_maintenance_row_error: e.g. its request is refused by
--             tf_submit's rules now, a CHECK, a trigger; not a deadlock, a lock timeout, a
--             read-only server or a missing object, which fail the call as before), they are
--             handled again one by one, each in its own subtransaction; a schedule that fails is
--             recorded in maintenance_errors (tf_maintenance_errors, schedule_name; a WARNING
--             the first time the error is seen) and left out until its retry_after (60 s
--             doubling to 1 h), its next_fire_at unchanged: when it succeeds later, catch-up
--             enqueues its latest tick. Its entry is deleted once the schedule is no longer
--             due (enqueued at last, rescheduled or deleted).
-- Parameters: max_tasks  a whole number 1..100000 (numeric, as in tf_recover), the most
--             schedules handled in one call; call again while enqueued = max_tasks.
-- Returns:    one row: enqueued = ticks handled; names, ticks and task_ids = one element per
--             tick, element-aligned, earliest tick first; next_fire_at = the earliest
--             next_fire_at of all schedules after the call (NULL without schedules; already
--             past when more than max_tasks were due or a due row was locked by another
--             caller); a schedule skipped for a recorded error counts with its retry_after.
-- Errors:     TF400 naming the argument; errors that are not about a row fail the call.
-- Locks:      FOR UPDATE SKIP LOCKED on due periodic_schedules rows; inserts tasks; the
--             maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry (due test, ticks, retry_after).
-- By hand:    yes; it only does early what the scheduler would do.
CREATE OR REPLACE FUNCTION taskforge.tf_enqueue_periodic(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(enqueued int, names text[], ticks timestamptz[], task_ids bigint[], next_fire_at timestamptz)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_skip text[];
    v_has_errors boolean;
    v_due text[];
    v_name text;
    r record;
    v_names text[] := '{}';
    v_ticks timestamptz[] := '{}';
    v_task_ids bigint[] := '{}';
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_enqueue_periodic.max_tasks, 1, 100000);

    -- Schedules recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_enqueue_periodic';

    -- Locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(d.name ORDER BY d.next_fire_at, d.name), '{}') INTO v_due
      FROM (SELECT p.name, p.next_fire_at
              FROM taskforge.periodic_schedules p
             WHERE p.next_fire_at <= v_now AND p.name <> ALL (v_skip)
             ORDER BY p.next_fire_at, p.name
             LIMIT tf_enqueue_periodic.max_tasks::int
               FOR UPDATE OF p SKIP LOCKED) d;

    IF cardinality(v_due) > 0 THEN
        BEGIN
            FOREACH v_name IN ARRAY v_due LOOP
                SELECT * INTO r FROM taskforge._tf_enqueue_tick(v_name, v_now);
                CONTINUE WHEN NOT FOUND;
                v_names := v_names || v_name;
                v_ticks := v_ticks || r.tick;
                v_task_ids := v_task_ids || r.task_id;
                IF r.created THEN
                    v_queues := v_queues || r.queue;
                END IF;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad schedule: all of them again, one by one, each in a subtransaction of its own
            -- (the variables are not rolled back with the subtransaction: start them afresh).
            v_names := '{}';
            v_ticks := '{}';
            v_task_ids := '{}';
            v_queues := '{}';
            FOREACH v_name IN ARRAY v_due LOOP
                BEGIN
                    SELECT * INTO r FROM taskforge._tf_enqueue_tick(v_name, v_now);
                    CONTINUE WHEN NOT FOUND;
                    v_names := v_names || v_name;
                    v_ticks := v_ticks || r.tick;
                    v_task_ids := v_task_ids || r.task_id;
                    IF r.created THEN
                        v_queues := v_queues || r.queue;
                    END IF;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_enqueue_periodic', v_name, v_sqlstate, v_message,
                                                             v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of schedules that are not due any more (enqueued now, rescheduled, deleted).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_enqueue_periodic'
           AND NOT EXISTS (SELECT 1 FROM taskforge.periodic_schedules p
                            WHERE p.name = e.subject AND p.next_fire_at <= v_now);
        SELECT coalesce(array_agg(e.subject) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_enqueue_periodic';
    END IF;

    RETURN QUERY
    SELECT cardinality(v_names), v_names, v_ticks, v_task_ids,
           least((SELECT p.next_fire_at FROM taskforge.periodic_schedules p
                   WHERE p.name <> ALL (v_skip) ORDER BY p.next_fire_at LIMIT 1), v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_enqueue_periodic(numeric) IS
    'Scheduler: enqueue the due tick of each periodic schedule once (SKIP LOCKED + idempotency key periodic:<name>:<tick>; catch-up fires only the latest missed tick) and advance next_fire_at. A schedule that fails to enqueue is skipped and recorded (tf_maintenance_errors), the others are enqueued. Returns the ticks and the next one. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_enqueue_periodic(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_enqueue_periodic(numeric) TO taskforge_scheduler;

-- >>> db/functions/tf_finalize.sql
-- taskforge.tf_finalize(task_id numeric, worker_id uuid, attempt_number numeric, outcome text,
--     result jsonb DEFAULT NULL, error jsonb DEFAULT NULL, error_text text DEFAULT NULL)
--   -> TABLE(accepted boolean, task_state text, reason text)
--
-- Purpose:    record how an attempt ended, committing the task and attempt outcome together.
--             Guard (taskforge._tf_guard): RUNNING, same attempt, same owner, lease unexpired.
--             A stale call changes nothing and returns accepted = false with the reason.
--             Outcomes (attempt state -> task state; the rule lives in
--             taskforge._tf_attempt_state_after and taskforge._tf_task_state_after):
--               succeeded  attempt SUCCEEDED -> task SUCCEEDED (result stored)
--               failed     attempt FAILED    -> task FAILED (ordinary error: terminal)
--               retryable  attempt FAILED    -> task RETRYING, scheduled_at = now + backoff of
--                          the task type's policy for this attempt number, when budget remains;
--                          task FAILED on the last allowed attempt
--               cancelled  attempt CANCELLED -> task CANCELLED
--             When tf_cancel was requested while the task ran: succeeded stays SUCCEEDED (the
--             work happened); any other outcome ends the task CANCELLED, never RETRYING.
-- Parameters: task_id, worker_id, attempt_number  as returned by tf_claim.
--             task_id and attempt_number are declared numeric (a bigint and an int in
--             fact) so that any number a caller writes gets TF400 naming it, not 42883.
--             outcome  'succeeded' | 'failed' | 'retryable' | 'cancelled'.
--             result   any JSON, at most 1 MiB as JSON text and nested at most 100 levels deep
--                      (taskforge._tf_json_too_deep; stored on success).
--             error    JSON describing the failure; a non-object becomes {"message": ...};
--                      capped at 16 KiB and flattened to text when nested more than 100
--                      levels deep (taskforge._tf_cap_error): it never makes the call fail.
--             error_text  (appended later) the failure as plain text, for callers that cannot
--                      be sure their text makes valid jsonb: stored as {"message": error_text},
--                      capped like error. Every text value is storable this way (jsonb escapes
--                      quotes and control characters), so it cannot make the call fail; only
--                      what cannot be text at all (U+0000, invalid UTF-8) is refused, before
--                      any function runs, by the server (22021) or the driver. A JSON escape
--                      such as \u0000 in error_text is kept as those six characters. Give
--                      error or error_text, not both (TF400). Ignored, like error, for
--                      succeeded. The batch forms take errors jsonb[] only.
-- Returns:    one row: accepted; the task state after the call (unchanged when refused);
--             reason NULL when accepted, else not_running | stale_attempt | not_owner | timed_out
--             | lease_expired (timed_out: the attempt's deadline has passed; recovery records it).
-- Errors:     TF400 naming the argument; TF404 no such task. Nothing is written on error.
-- Locks:      the tasks row FOR UPDATE (waits; serialises with renew, recover and cancel of the
--             same task), then its attempts row.
-- Writes:     through taskforge._tf_turn, as a batch of one: the same statement as
--             tf_finalize_many and tf_finalize_and_claim.
-- Notify:     only for a task submitted with notify_finished that this call ends (SUCCEEDED,
--             FAILED, CANCELLED): pg_notify('taskforge_finished', task_id), on commit (the row
--             trigger of taskforge._tf_notify_finished); no other NOTIFY.
-- Clock:      clock_timestamp() read after the row lock is held (a wait for the lock may
--             outlive the lease): guard, finish time and backoff start.
-- By hand:    only for a task you own (the guard makes a stale call harmless).
CREATE OR REPLACE FUNCTION taskforge.tf_finalize(
    task_id numeric,
    worker_id uuid,
    attempt_number numeric,
    outcome text,
    result jsonb DEFAULT NULL,
    error jsonb DEFAULT NULL,
    error_text text DEFAULT NULL)
RETURNS TABLE(accepted boolean, task_state text, reason text)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_attempt_number int;
    v_error jsonb;
BEGIN
    PERFORM taskforge._tf_check_fencing(tf_finalize.task_id, tf_finalize.worker_id, tf_finalize.attempt_number);
    v_task_id := tf_finalize.task_id;                -- checked: a whole number within bigint
    v_attempt_number := tf_finalize.attempt_number;  -- checked: 1 .. 2147483647
    PERFORM taskforge._tf_check_outcome('outcome', 'result', tf_finalize.outcome, tf_finalize.result);
    IF tf_finalize.error IS NOT NULL THEN
        IF tf_finalize.error_text IS NOT NULL THEN
            PERFORM taskforge._tf_invalid('error_text', 'give error or error_text, not both');
        END IF;
        v_error := tf_finalize.error;
    ELSIF tf_finalize.error_text IS NOT NULL THEN
        v_error := jsonb_build_object('message', tf_finalize.error_text);
    END IF;

    -- Wait for the row (TF404 when there is none), then write through the batch path, whose
    -- clock is read now that the row is ours: the lock wait may have outlived the lease.
    PERFORM taskforge._tf_lock_task(v_task_id);
    RETURN QUERY
    SELECT f.accepted, f.task_state, f.reason
      FROM taskforge._tf_turn(tf_finalize.worker_id, ARRAY[v_task_id], ARRAY[v_attempt_number],
                              ARRAY[tf_finalize.outcome], ARRAY[tf_finalize.result], ARRAY[v_error],
                              '{}', NULL, clock_timestamp()) AS f;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) IS
    'Record an attempt outcome (succeeded|failed|retryable|cancelled) under the ownership guard; task and attempt change together. Stale calls return accepted=false with a reason. Ending a task submitted with notify_finished sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) TO taskforge_worker;

-- >>> db/functions/tf_finalize_and_claim.sql
-- taskforge.tf_finalize_and_claim(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL,
--     queues text[] DEFAULT NULL, lease_seconds double precision DEFAULT 30,
--     max_tasks numeric DEFAULT 1, task_types text[] DEFAULT NULL)
--   -> TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
--            reason text, task_type text, payload jsonb, queue text, priority int,
--            max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
--            traceparent text)
--
-- Purpose:    a worker's whole turn in one round trip and one commit: finalize the attempts it
--             just finished (exactly tf_finalize_many) and claim up to max_tasks new ones
--             (exactly tf_claim). Finishing one task and taking the next then costs one commit
--             instead of two.
-- Parameters: worker_id, task_ids, attempt_numbers, outcomes, results, errors
--                 as tf_finalize_many, except that task_ids may be empty ('{}', with
--                 attempt_numbers and outcomes empty too): then the call only claims.
--             queues, lease_seconds, task_types   as tf_claim.
--             max_tasks  whole number 0..1000: how many to claim (0 = finalize only).
-- Returns:    first one 'finalized' row per element, in input order (task_id, attempt_number,
--             accepted, task_state, reason as tf_finalize_many; the claim columns NULL), then
--             one 'claimed' row per claimed task in claim order (task_id, attempt_number,
--             task_type, payload, queue, priority, max_attempts, lease_expires_at,
--             timeout_seconds, traceparent as tf_claim;
--             accepted, task_state, reason NULL). The kind column says which.
-- Errors:     TF400 naming the argument (and element); queues, task_types and lease_seconds
--             are validated even when max_tasks = 0. TF404 unknown or deregistered worker when
--             max_tasks > 0 (with max_tasks = 0 the worker need not be registered, as for
--             tf_finalize_many). Nothing is written when an error is raised.
-- Locks:      as tf_claim (the pick), then as tf_finalize_many: SKIP LOCKED throughout, never
--             waits.
-- Writes:     the pick (taskforge._tf_claim_pick) chooses and locks the tasks to start; one
--             statement (taskforge._tf_turn) then ends the given attempts and starts the picked
--             ones. A limited queue counts the attempts this call ends as ended (the pick judges
--             them with the same guard and clock as the write), so a slot freed by this call
--             can be claimed by it.
-- Notify:     only for the tasks submitted with notify_finished that this call ends:
--             pg_notify('taskforge_finished', task_id) each, on commit (the row trigger of
--             taskforge._tf_notify_finished); claims never notify.
-- Clock:      clock_timestamp() once, after validation: guard, due test, finish time, backoff
--             start, lease start and attempt start.
-- By hand:    only as a registered worker that will renew or finalize what it takes.
CREATE OR REPLACE FUNCTION taskforge.tf_finalize_and_claim(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL,
    queues text[] DEFAULT NULL,
    lease_seconds double precision DEFAULT 30,
    max_tasks numeric DEFAULT 1,
    task_types text[] DEFAULT NULL)
RETURNS TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
              reason text, task_type text, payload jsonb, queue text, priority int,
              max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
              traceparent text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_finalize boolean := cardinality(tf_finalize_and_claim.task_ids) <> 0;
BEGIN
    IF NOT v_finalize THEN
        IF coalesce(cardinality(tf_finalize_and_claim.attempt_numbers), -1) <> 0 THEN
            PERFORM taskforge._tf_invalid('attempt_numbers', 'must be empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.outcomes), -1) <> 0 THEN
            PERFORM taskforge._tf_invalid('outcomes', 'must be empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.results), 0) <> 0 THEN
            PERFORM taskforge._tf_invalid('results', 'must be NULL or empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.errors), 0) <> 0 THEN
            PERFORM taskforge._tf_invalid('errors', 'must be NULL or empty when task_ids is empty');
        END IF;
        IF tf_finalize_and_claim.max_tasks IS NULL OR tf_finalize_and_claim.max_tasks NOT BETWEEN 1 AND 1000
           OR tf_finalize_and_claim.max_tasks <> trunc(tf_finalize_and_claim.max_tasks) THEN
            PERFORM taskforge._tf_check_int('max_tasks', tf_finalize_and_claim.max_tasks, 1, 1000);
        END IF;
        IF tf_finalize_and_claim.worker_id IS NULL THEN
            PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
        END IF;
    ELSE
        IF tf_finalize_and_claim.max_tasks IS NULL OR tf_finalize_and_claim.max_tasks NOT BETWEEN 0 AND 1000
           OR tf_finalize_and_claim.max_tasks <> trunc(tf_finalize_and_claim.max_tasks) THEN
            PERFORM taskforge._tf_check_int('max_tasks', tf_finalize_and_claim.max_tasks, 0, 1000);
        END IF;
        IF NOT coalesce(taskforge._tf_valid_batch_of_one(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids, tf_finalize_and_claim.attempt_numbers,
                                                   tf_finalize_and_claim.outcomes, tf_finalize_and_claim.results, tf_finalize_and_claim.errors, true), false) THEN
            -- Not a certainly valid batch of one: the full check, which raises the precise error.
            PERFORM taskforge._tf_check_batch(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids, tf_finalize_and_claim.attempt_numbers,
                                              tf_finalize_and_claim.outcomes, tf_finalize_and_claim.results, tf_finalize_and_claim.errors, true);
        END IF;
        IF tf_finalize_and_claim.max_tasks = 0 THEN
            -- _tf_claim_pick will not run, so validate its arguments here, before anything is
            -- written (a finalize-only call needs no registered worker, but valid arguments).
            PERFORM taskforge._tf_check_names('queues', tf_finalize_and_claim.queues, 'queue');
            PERFORM taskforge._tf_check_names('task_types', tf_finalize_and_claim.task_types, 'task_type');
            PERFORM taskforge._tf_check_seconds('lease_seconds', tf_finalize_and_claim.lease_seconds, 0, 86400, true);
        END IF;
    END IF;
    -- Checked: task_ids are whole numbers within bigint, attempt numbers within int. Nothing
    -- below waits for a lock, so one clock reading serves the pick and the writes.
    v_now := clock_timestamp();
    RETURN QUERY
    SELECT * FROM taskforge._tf_turn(
        tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids::bigint[],
        tf_finalize_and_claim.attempt_numbers::int[], tf_finalize_and_claim.outcomes,
        tf_finalize_and_claim.results, tf_finalize_and_claim.errors,
        CASE WHEN tf_finalize_and_claim.max_tasks > 0 THEN
            taskforge._tf_claim_pick(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.queues,
                                     tf_finalize_and_claim.lease_seconds, tf_finalize_and_claim.max_tasks::int,
                                     tf_finalize_and_claim.task_types, v_now,
                                     CASE WHEN v_finalize THEN tf_finalize_and_claim.task_ids::bigint[] END,
                                     CASE WHEN v_finalize THEN tf_finalize_and_claim.attempt_numbers::int[] END)
        END,
        tf_finalize_and_claim.lease_seconds, v_now);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize_and_claim(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]) IS
    'A worker turn in one commit: tf_finalize_many of the given attempts, then tf_claim of up to max_tasks (0..1000). Rows: kind finalized (input order) then kind claimed (claim order), traceparent last. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize_and_claim(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize_and_claim(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]
) TO taskforge_worker;

-- >>> db/functions/tf_finalize_many.sql
-- taskforge.tf_finalize_many(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL)
--   -> TABLE(task_id bigint, attempt_number int, accepted boolean, task_state text, reason text)
--
-- Purpose:    the batch form of tf_finalize: record how up to 1000 attempts of one worker
--             ended, in one statement and one commit. Element i is (task_ids[i],
--             attempt_numbers[i], outcomes[i], results[i], errors[i]); each obeys exactly
--             tf_finalize's guard (RUNNING, same attempt, same owner, lease unexpired) and
--             outcome rules (see tf_finalize), and a refused element changes nothing.
--             Unlike tf_finalize it never waits for a row lock: a task whose row another
--             transaction holds is skipped (SKIP LOCKED) and reported busy, so a caller never
--             needs a lock timeout; send such elements again a moment later.
-- Parameters: worker_id        the worker that owns the attempts.
--             task_ids         1..1000 task ids (whole numbers within bigint), no NULL, no task twice.
--             attempt_numbers  as many attempt numbers (whole numbers 1..2147483647).
--             Both arrays are declared numeric[] so that any number a caller writes gets TF400
--             naming the element, not 42883; they are converted once checked.
--             outcomes         text[] of the same length: succeeded | failed | retryable | cancelled.
--             results          jsonb[] of the same length or NULL; each at most 1 MiB as JSON
--                              text and nested at most 100 levels deep; stored for succeeded
--                              elements.
--             errors           jsonb[] of the same length or NULL; a non-object becomes
--                              {"message": ...}; capped at 16 KiB, flattened to text when nested
--                              more than 100 levels deep; stored for other outcomes.
-- Returns:    one row per element, in input order: accepted; the task state after the call
--             (as last committed when refused; NULL for not_found); reason NULL when accepted,
--             else busy | not_found | not_running | stale_attempt | not_owner | timed_out | lease_expired.
-- Errors:     TF400 naming the argument and element (e.g. 'outcomes[2]: must be one of ...').
--             Nothing is written when an error is raised.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks rows (never waits), then their attempt rows.
-- Writes:     taskforge._tf_turn's one statement (tf_finalize and tf_finalize_and_claim write
--             through it too); the arguments are checked first by taskforge._tf_check_batch.
-- Notify:     only for the tasks submitted with notify_finished that this call ends:
--             pg_notify('taskforge_finished', task_id) each, on commit (the row trigger of
--             taskforge._tf_notify_finished); no other NOTIFY.
-- Clock:      clock_timestamp() once (nothing is waited for): guard, finish time, backoff start.
-- By hand:    only for attempts you own (the guard makes a stale element harmless).
CREATE OR REPLACE FUNCTION taskforge.tf_finalize_many(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL)
RETURNS TABLE(task_id bigint, attempt_number int, accepted boolean, task_state text, reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    IF NOT coalesce(taskforge._tf_valid_batch_of_one(tf_finalize_many.worker_id, tf_finalize_many.task_ids, tf_finalize_many.attempt_numbers,
                                               tf_finalize_many.outcomes, tf_finalize_many.results, tf_finalize_many.errors, true), false) THEN
        -- Not a certainly valid batch of one: the full check, which raises the precise error.
        PERFORM taskforge._tf_check_batch(tf_finalize_many.worker_id, tf_finalize_many.task_ids, tf_finalize_many.attempt_numbers,
                                          tf_finalize_many.outcomes, tf_finalize_many.results, tf_finalize_many.errors, true);
    END IF;
    -- Checked: task_ids are whole numbers within bigint, attempt numbers within int.
    RETURN QUERY
    SELECT f.task_id, f.attempt_number, f.accepted, f.task_state, f.reason
      FROM taskforge._tf_turn(tf_finalize_many.worker_id, tf_finalize_many.task_ids::bigint[],
                              tf_finalize_many.attempt_numbers::int[], tf_finalize_many.outcomes,
                              tf_finalize_many.results, tf_finalize_many.errors, '{}', NULL,
                              clock_timestamp()) AS f;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize_many(uuid, numeric[], numeric[], text[], jsonb[], jsonb[]) IS
    'Batch tf_finalize: one row per element in input order, same guard and outcome rules; rows locked elsewhere are skipped (SKIP LOCKED) and reported busy. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize_many(uuid, numeric[], numeric[], text[], jsonb[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize_many(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[]
) TO taskforge_worker;

-- >>> db/functions/tf_heartbeat.sql
-- taskforge.tf_heartbeat(worker_id uuid) -> timestamptz
--
-- Purpose:    report that a worker process is alive. A heartbeat shows recent communication
--             only: it neither extends a task lease (tf_renew does) nor revokes a task.
-- Parameters: worker_id  from tf_register_worker.
-- Returns:    the database time recorded as last_heartbeat_at.
-- Errors:     TF400 worker_id NULL; TF404 unknown or deregistered worker.
-- Locks:      the workers row (UPDATE).
-- Clock:      clock_timestamp().
-- By hand:    yes, though it makes a dead worker look alive until its next missed beats.
CREATE OR REPLACE FUNCTION taskforge.tf_heartbeat(worker_id uuid)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    IF tf_heartbeat.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    UPDATE taskforge.workers w
       SET last_heartbeat_at = greatest(v_now, w.started_at)
     WHERE w.worker_id = tf_heartbeat.worker_id AND w.stopped_at IS NULL;
    IF NOT FOUND THEN
        PERFORM taskforge._tf_unknown_worker(tf_heartbeat.worker_id);
    END IF;
    RETURN v_now;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_heartbeat(uuid) IS
    'Worker liveness beat; returns database time. Does not touch leases. Errors: TF400, TF404 (unknown or deregistered worker).';
REVOKE ALL ON FUNCTION taskforge.tf_heartbeat(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_heartbeat(uuid) TO taskforge_worker;

-- >>> db/functions/tf_maintain.sql
-- CALL taskforge.tf_maintain(run_seconds double precision DEFAULT 0,
--     interval_seconds double precision DEFAULT 1, retain_days double precision DEFAULT NULL,
--     max_tasks numeric DEFAULT 1000, INOUT recovered bigint DEFAULT NULL,
--     INOUT promoted bigint DEFAULT NULL, INOUT enqueued bigint DEFAULT NULL,
--     INOUT pruned bigint DEFAULT NULL)
--
-- Purpose:    the scheduler's work without a Python process, for pg_cron (or any job runner that
--             can CALL): passes of tf_make_partitions, tf_recover, tf_promote and
--             tf_enqueue_periodic (each repeated
--             while it returns a full batch) and, with retain_days, one round of tf_prune and
--             tf_prune_workers per minute, each pass in short transactions of its own (COMMIT
--             after every batch), so no snapshot or lock is held across passes. It keeps passing
--             every interval_seconds until run_seconds have gone by (0: one pass): pg_cron runs
--             at most once a minute, so `CALL taskforge.tf_maintain(run_seconds => 55)` every
--             minute recovers an expired lease within about interval_seconds (at most 60 -
--             run_seconds + interval_seconds at a run's end). Each pass also beats in
--             tf_schedulers as the scheduler named 'tf_maintain' (one fixed scheduler_id per
--             database, heartbeat_seconds 60), so `taskforge healthcheck` and the console see it.
--             On a hot standby it does nothing and returns zeros (pg_cron runs nothing there
--             either). Several calls at once are safe: every sweep claims its rows SKIP LOCKED.
-- Parameters: run_seconds       0..3600 seconds.
--             interval_seconds  0.01..3600 seconds between passes.
--             retain_days       NULL (keep all history) or 0..36500 days: prune terminal tasks
--                               (and the records of processes gone as long) finished longer ago.
--             max_tasks         whole number 1..100000, the batch size of every sweep.
--             recovered, promoted, enqueued, pruned: leave NULL; they come back as the totals
--                               of this call (recovered counts requeued and ended tasks).
-- Returns:    one row (recovered, promoted, enqueued, pruned), the totals of this call.
-- Errors:     TF400 naming the argument (nothing written). 2D000 (invalid transaction
--             termination) when called inside a transaction block or from a function: CALL it
--             on its own, as pg_cron does. An error of a sweep ends the call after the batches
--             already committed (the sweeps isolate a bad row themselves).
-- Locks:      those of the functions it calls; none across passes.
-- Security:   SECURITY INVOKER (a procedure that commits cannot be SECURITY DEFINER): the caller
--             needs taskforge_scheduler, which EXECUTE is granted to, as for the functions it calls.
-- Clock:      clock_timestamp() for run_seconds, the prune interval and the sleeps (pg_sleep; a
--             sleep holds a snapshot for at most interval_seconds, and xmin moves on each pass).
-- By hand:    yes; `CALL taskforge.tf_maintain();` is one scheduler pass.
CREATE OR REPLACE PROCEDURE taskforge.tf_maintain(
    run_seconds double precision DEFAULT 0,
    interval_seconds double precision DEFAULT 1,
    retain_days double precision DEFAULT NULL,
    max_tasks numeric DEFAULT 1000,
    INOUT recovered bigint DEFAULT NULL,
    INOUT promoted bigint DEFAULT NULL,
    INOUT enqueued bigint DEFAULT NULL,
    INOUT pruned bigint DEFAULT NULL)
LANGUAGE plpgsql
AS $fn$
DECLARE
    -- One scheduler identity per database, so tf_schedulers shows one 'tf_maintain' row.
    v_id uuid := pg_catalog.md5('taskforge.tf_maintain ' || pg_catalog.current_database())::uuid;
    v_end timestamptz;
    v_next_prune timestamptz;
    v_batch int;
    v_n int;
    v_m int;
    v_left double precision;
    v_arg text;
    v_value double precision;
    v_low double precision;
    v_high double precision;
    v_unit text;
BEGIN
    recovered := 0;
    promoted := 0;
    enqueued := 0;
    pruned := 0;
    -- The checks of _tf_check_seconds / _tf_check_int, written out: a SECURITY INVOKER routine
    -- may not call the private helpers (no TaskForge role may execute them).
    FOR v_arg, v_value, v_low, v_high, v_unit IN
        SELECT a.*
          FROM (VALUES ('run_seconds', tf_maintain.run_seconds, 0::float8, 3600::float8, 'seconds'),
                       ('interval_seconds', tf_maintain.interval_seconds, 0.01, 3600, 'seconds'),
                       ('retain_days', coalesce(tf_maintain.retain_days, 0), 0, 36500, 'days'),
                       ('max_tasks', tf_maintain.max_tasks::float8, 1, 100000, 'tasks')) AS a
    LOOP
        IF v_value IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg, MESSAGE = v_arg || ': must not be NULL';
        END IF;
        -- NaN sorts above every number and Infinity above the bounds: both fail the range test.
        IF v_arg = 'max_tasks' AND (v_value < v_low OR v_value > v_high OR tf_maintain.max_tasks % 1 <> 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg,
                MESSAGE = pg_catalog.format('max_tasks: must be a whole number between 1 and 100000, got %s',
                                            tf_maintain.max_tasks);
        ELSIF v_value < v_low OR v_value > v_high THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg,
                MESSAGE = pg_catalog.format('%s: must be at least %s and at most %s %s, got %s',
                                            v_arg, v_low, v_high, v_unit, v_value);
        END IF;
    END LOOP;
    v_batch := tf_maintain.max_tasks::int;
    IF pg_catalog.pg_is_in_recovery() THEN
        RETURN;
    END IF;
    v_end := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => tf_maintain.run_seconds);
    v_next_prune := pg_catalog.clock_timestamp();
    LOOP
        PERFORM taskforge.tf_scheduler_heartbeat(
            scheduler_id => v_id, name => 'tf_maintain', pid => pg_catalog.pg_backend_pid(),
            heartbeat_seconds => 60);
        COMMIT;
        PERFORM taskforge.tf_make_partitions();  -- the partitioned history's ranges ahead (else nothing)
        COMMIT;
        LOOP
            SELECT r.recovered + r.failed INTO v_n FROM taskforge.tf_recover(max_tasks => v_batch) AS r;
            COMMIT;
            recovered := recovered + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        LOOP
            SELECT p.promoted INTO v_n FROM taskforge.tf_promote(max_tasks => v_batch) AS p;
            COMMIT;
            promoted := promoted + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        LOOP
            SELECT e.enqueued INTO v_n FROM taskforge.tf_enqueue_periodic(max_tasks => v_batch) AS e;
            COMMIT;
            enqueued := enqueued + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        IF tf_maintain.retain_days IS NOT NULL AND pg_catalog.clock_timestamp() >= v_next_prune THEN
            LOOP
                v_n := taskforge.tf_prune(older_than_seconds => tf_maintain.retain_days * 86400, max_tasks => v_batch);
                COMMIT;
                pruned := pruned + v_n;
                EXIT WHEN v_n < v_batch;
            END LOOP;
            LOOP
                SELECT w.workers + w.schedulers INTO v_m
                  FROM taskforge.tf_prune_workers(older_than_seconds => tf_maintain.retain_days * 86400,
                                                  max_rows => v_batch) AS w;
                COMMIT;
                EXIT WHEN v_m < v_batch;
            END LOOP;
            v_next_prune := pg_catalog.clock_timestamp() + interval '60 seconds';
        END IF;
        v_left := extract(EPOCH FROM v_end - pg_catalog.clock_timestamp());
        EXIT WHEN v_left <= 0;
        PERFORM pg_catalog.pg_sleep(least(tf_maintain.interval_seconds, v_left));
        COMMIT;
    END LOOP;
END;
$fn$;

COMMENT ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint) IS
    'The scheduler''s passes (tf_recover, tf_promote, tf_enqueue_periodic; tf_prune and tf_prune_workers each minute with retain_days) in short committed transactions, every interval_seconds for run_seconds; beats in tf_schedulers as tf_maintain; nothing on a standby. For pg_cron: CALL taskforge.tf_maintain(run_seconds => 55) every minute. Errors: TF400; 2D000 inside a transaction block.';
REVOKE ALL ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint)
    TO taskforge_scheduler;

-- >>> db/functions/tf_make_partitions.sql
-- taskforge.tf_make_partitions() -> int
--
-- Purpose:    on the partitioned history (tf_partition_history; docs/operations.md,
--             "Partitioned history"), keep history_layout.partitions_ahead empty task-id ranges
--             made beyond the range the next task id falls in, so a submit always finds its
--             partition: a range of tasks_per_partition ids is a pair taskforge.tasks_p<N>,
--             taskforge.attempts_p<N> (taskforge._tf_add_partition), N = first id /
--             tasks_per_partition. The scheduler calls it before every pass, in a statement of
--             its own, and tf_maintain every pass;
--             on the default layout it reads one empty table and returns 0. A submit whose id has
--             no partition fails with 23514 (no partition of relation "tasks" found for row):
--             run a scheduler or tf_maintain, or raise partitions_ahead, so that never happens.
-- Parameters: none.
-- Returns:    the number of ranges made (0: enough were there, or the default layout).
-- Errors:     none of its own. When the ACCESS EXCLUSIVE lock on tasks/attempts is not granted
--             within lock_timeout (1 s: a long transaction reads the tables), or a deadlock with
--             a reader that locked attempts first ends the wait, it makes none this time,
--             raises a WARNING and returns 0; the next call tries again.
-- Locks:      history_layout's row (FOR UPDATE, so two callers make each range once) and, to
--             create a range, until the caller commits: ACCESS EXCLUSIVE on tasks and attempts
--             (every claim and submit waits, also while it is queued, at most lock_timeout) and
--             SHARE ROW EXCLUSIVE on task_types and workers (the new partitions' foreign keys:
--             heartbeats wait). Call it in a transaction of its own (the scheduler does).
-- Clock:      clock_timestamp() (the ranges' created_at).
-- By hand:    yes; harmless.
CREATE OR REPLACE FUNCTION taskforge.tf_make_partitions()
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 1000
AS $fn$
DECLARE
    v_size bigint;
    v_ahead int;
    v_last bigint;
    v_end bigint;
    v_need bigint;
    v_made int := 0;
BEGIN
    SELECT l.tasks_per_partition, l.partitions_ahead INTO v_size, v_ahead FROM taskforge.history_layout l;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    SELECT s.last_value INTO v_last FROM taskforge.tasks_task_id_seq s;
    v_need := (v_last / v_size + 1 + v_ahead) * v_size;
    IF (SELECT max(p.end_task_id) FROM taskforge.history_partitions p) >= v_need THEN
        RETURN 0;
    END IF;
    BEGIN
        PERFORM 1 FROM taskforge.history_layout l FOR UPDATE;
        SELECT max(p.end_task_id) INTO v_end FROM taskforge.history_partitions p;
        WHILE v_end < v_need LOOP
            PERFORM taskforge._tf_add_partition(v_end);
            v_end := v_end + v_size;
            v_made := v_made + 1;
        END LOOP;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        RAISE WARNING 'taskforge: tf_make_partitions: tasks or attempts stayed locked for lock_timeout (or a '
            'deadlock with a reader); no range made this time (ranges left ahead: %)',
            greatest((coalesce(v_end, 0) - (v_last / v_size + 1) * v_size) / v_size, 0);
        RETURN 0;
    END;
    RETURN v_made;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_make_partitions() IS
    'Partitioned history: make task-id ranges (tasks_p<N>, attempts_p<N>) so that partitions_ahead empty ones lie beyond the next task id. Returns the number made; 0 on the default layout.';
REVOKE ALL ON FUNCTION taskforge.tf_make_partitions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_make_partitions() TO taskforge_scheduler;

-- >>> db/functions/tf_parent_results.sql
-- taskforge.tf_parent_results(task_id numeric, worker_id uuid, attempt_number numeric)
--   -> TABLE(parent_task_id bigint, state text, result jsonb)
--
-- Purpose:    what a handler reads as its parents' results (ctx.parent_results in the Python
--             and Node workers): one row per parent of the task (tf_submit's depends_on), with
--             its state (SUCCEEDED for every parent of a task that started) and its result.
--             Workers read no view (docs/design.md §7), so this function is their way, and
--             like tf_renew it takes the attempt's fencing token: only the worker running
--             that attempt gets the rows. Clients and the console read the view
--             tf_task_dependencies instead.
-- Parameters: task_id, worker_id, attempt_number  the attempt (tf_claim's columns).
-- Returns:    the parents in task id order; no rows for a task without parents.
-- Errors:     TF400 naming the argument; TF404 no such task; TF409 'task_id: ...' when that
--             attempt does not hold the task (not RUNNING, another attempt or another worker).
-- Locks:      none.
-- Clock:      none.
-- By hand:    yes, with a held attempt.
CREATE OR REPLACE FUNCTION taskforge.tf_parent_results(task_id numeric, worker_id uuid, attempt_number numeric)
RETURNS TABLE(parent_task_id bigint, state text, result jsonb)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_task taskforge.tasks%ROWTYPE;
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_parent_results.task_id);
    v_task_id := tf_parent_results.task_id;  -- checked: a whole number within bigint
    IF tf_parent_results.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    PERFORM taskforge._tf_check_int('attempt_number', tf_parent_results.attempt_number, 1, 10000);
    SELECT * INTO v_task FROM taskforge.tasks t WHERE t.task_id = v_task_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404', MESSAGE = format('task_id: no task %s', v_task_id),
            COLUMN = 'task_id';
    END IF;
    IF v_task.state <> 'RUNNING' OR v_task.owner_worker_id IS DISTINCT FROM tf_parent_results.worker_id
       OR v_task.attempt_count <> tf_parent_results.attempt_number THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: attempt %s of task %s is not held by worker %s (task is %s at attempt %s)',
                             tf_parent_results.attempt_number, v_task_id, tf_parent_results.worker_id,
                             v_task.state, v_task.attempt_count),
            COLUMN = 'task_id';
    END IF;
    RETURN QUERY
        SELECT p.task_id, p.state::text, p.result
          FROM taskforge.task_dependencies d
          JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
         WHERE d.child_task_id = v_task_id
         ORDER BY p.task_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) IS
    'A running attempt''s parents (depends_on) with their state and result, for the worker holding that attempt (fencing token as tf_renew). Errors: TF400, TF404, TF409 (attempt not held).';
REVOKE ALL ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) TO taskforge_worker;

-- >>> db/functions/tf_partition_history.sql
-- taskforge.tf_partition_history(tasks_per_partition numeric, partitions_ahead numeric DEFAULT 1)
--   -> int
--
-- Purpose:    convert an install, with its data, to the partitioned history (docs/operations.md,
--             "Partitioned history"; opt-in, once): taskforge.tasks and taskforge.attempts
--             become tables PARTITION BY RANGE (task_id), and retention (tf_prune) drops whole
--             ranges instead of deleting rows. In one transaction: the two tables are renamed
--             tasks_p<N>/attempts_p<N> and attached unchanged (no row is copied; PostgreSQL
--             scans each once to check its range) as the first range, from the lowest task id
--             up to the first multiple of tasks_per_partition above every id drawn so far;
--             new parents named tasks and attempts get the old tables' columns, defaults,
--             checks, primary keys, foreign keys, indexes (same names), row triggers and
--             comments, read from the catalog, and every view of the schema is defined again
--             over them; attempts_p<N> keeps its foreign key to tasks_p<N> (each range's
--             attempts refer to their twin range); task_id's identity becomes a plain sequence
--             of the same name (taskforge.tasks_task_id_seq, same next value), since a
--             partitioned table has no identity column on PostgreSQL 15; then partitions_ahead
--             empty ranges are made (taskforge._tf_add_partition) and the layout is recorded in
--             taskforge.history_layout and taskforge.history_partitions. The functions name
--             tables, not partitions, and stay as they are, except those whose signature names
--             a row type of the two tables (taskforge._tf_lock_task returns a tasks row): they
--             are made again over the parent's type, with their comment and privileges. Objects
--             outside schema taskforge that depend on the two tables (a view of your own) stay
--             bound to the first range: drop them first, make them again after.
-- Parameters: tasks_per_partition  whole number 1000..1000000000: task ids per range (few, large
--                                   ranges: every partition costs each claim and finalize some
--                                   work, docs/benchmarks.md).
--             partitions_ahead     whole number 1..100: empty ranges kept ahead of the next id
--                                   (tf_make_partitions keeps them).
-- Returns:    the number of ranges made, the first (the old tables) included.
-- Errors:     TF400 naming the argument; TF409 'tasks: already partitioned' the second time;
--             55P03 when the tables stay locked past the caller's lock_timeout. Nothing is
--             changed then.
-- Locks:      ACCESS EXCLUSIVE on tasks and attempts until the caller commits (taken first:
--             every worker, submit and console read waits for the conversion).
-- Security:   SECURITY DEFINER, EXECUTE for nobody: only the owner or a superuser (the
--             migrating user) calls it; the objects it makes belong to taskforge_owner.
-- Clock:      clock_timestamp() (partitioned_at, created_at).
-- By hand:    yes, or `taskforge db partition` (docs/cli.md). There is no way back but a dump
--             and restore into a new install.
CREATE OR REPLACE FUNCTION taskforge.tf_partition_history(
    tasks_per_partition numeric, partitions_ahead numeric DEFAULT 1)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_tasks oid;
    v_attempts oid;
    v_size bigint;
    v_ahead int;
    v_next bigint;
    v_end bigint;
    v_no bigint;
    v_before text[];
    v_after text[];
    v_statement text;
    r record;
BEGIN
    PERFORM taskforge._tf_check_int('tasks_per_partition', tf_partition_history.tasks_per_partition, 1000, 1000000000);
    PERFORM taskforge._tf_check_int('partitions_ahead', tf_partition_history.partitions_ahead, 1, 100);
    v_size := tf_partition_history.tasks_per_partition;
    v_ahead := tf_partition_history.partitions_ahead;
    -- Locked first, then looked at: a second conversion waiting here finds the first's work.
    LOCK TABLE taskforge.tasks, taskforge.attempts IN ACCESS EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM taskforge.history_layout) THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409', MESSAGE = 'tasks: already partitioned',
            HINT = 'taskforge.history_partitions lists the ranges; tf_make_partitions adds more.';
    END IF;
    v_tasks := 'taskforge.tasks'::regclass;
    v_attempts := 'taskforge.attempts'::regclass;

    -- The first range ends at the first multiple of the size above every id drawn so far.
    SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END INTO v_next
      FROM taskforge.tasks_task_id_seq s;
    v_next := greatest(v_next, (SELECT max(t.task_id) + 1 FROM taskforge.tasks t));
    v_end := ((v_next - 1) / v_size + 1) * v_size;
    v_no := v_end / v_size - 1;

    -- What the parents must have, read before anything is renamed: these definitions name
    -- taskforge.tasks and taskforge.attempts, which will then be the parents.
    -- Steps 1-4 are run on the parents before the old tables are attached, 5-6 after.
    SELECT array_agg(x.statement ORDER BY x.step, x.seq) FILTER (WHERE x.step <= 4),
           array_agg(x.statement ORDER BY x.step, x.seq) FILTER (WHERE x.step > 4)
      INTO v_before, v_after
      FROM (
        -- Primary keys and foreign keys, but the attempts -> tasks key (it stays with attempts_p<N>).
        SELECT 1 AS step, c.oid::bigint AS seq,
               format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                      pg_get_constraintdef(c.oid)) AS statement
          FROM pg_constraint c
         WHERE c.conrelid IN (v_tasks, v_attempts)
           AND (c.contype = 'p' OR (c.contype = 'f' AND c.confrelid <> v_tasks))
        UNION ALL
        SELECT 2, i.indexrelid::bigint, pg_get_indexdef(i.indexrelid)
          FROM pg_index i
         WHERE i.indrelid IN (v_tasks, v_attempts) AND NOT i.indisprimary
        UNION ALL
        SELECT 3, c.oid::bigint, format('COMMENT ON TABLE %s IS %L', c.oid::regclass, obj_description(c.oid, 'pg_class'))
          FROM pg_class c WHERE c.oid IN (v_tasks, v_attempts) AND obj_description(c.oid, 'pg_class') IS NOT NULL
        UNION ALL
        -- Functions whose signature names a row type of the two tables (taskforge._tf_lock_task
        -- returns a tasks row): dropped and made again over the parent's row type, with their
        -- comment and EXECUTE privileges.
        SELECT 4, f.oid::bigint,
               format('DROP FUNCTION %s; %s; REVOKE ALL ON FUNCTION %s FROM PUBLIC; COMMENT ON FUNCTION %s IS %L; ',
                      f.oid::regprocedure, pg_get_functiondef(f.oid), f.oid::regprocedure, f.oid::regprocedure,
                      obj_description(f.oid, 'pg_proc'))
               || coalesce((SELECT string_agg(format('GRANT EXECUTE ON FUNCTION %s TO %s', f.oid::regprocedure,
                                                     CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END),
                                              '; ')
                              FROM aclexplode(f.proacl) a WHERE a.grantee <> f.proowner), '')
          FROM pg_proc f
         WHERE f.oid IN (SELECT d.objid FROM pg_depend d
                          WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_type'::regclass
                            AND d.refobjid IN (SELECT t.oid FROM pg_type t JOIN pg_class c ON t.oid IN (c.reltype, (
                                                     SELECT a.typarray FROM pg_type a WHERE a.oid = c.reltype))
                                                WHERE c.oid IN (v_tasks, v_attempts)))
        UNION ALL
        -- After the attach: a trigger made on a parent is made on each of its partitions.
        SELECT 5, g.oid::bigint, pg_get_triggerdef(g.oid)
          FROM pg_trigger g WHERE g.tgrelid IN (v_tasks, v_attempts) AND NOT g.tgisinternal
        UNION ALL
        SELECT 6, c.oid::bigint,
               format('CREATE OR REPLACE VIEW %s%s AS %s', c.oid::regclass,
                      CASE WHEN c.reloptions IS NOT NULL THEN format(' WITH (%s)', array_to_string(c.reloptions, ', ')) ELSE '' END,
                      pg_get_viewdef(c.oid))
          FROM pg_class c WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind = 'v'
      ) x;

    INSERT INTO taskforge.history_layout (tasks_per_partition, partitions_ahead, tasks_options, attempts_options, partitioned_at)
    SELECT v_size, v_ahead, (SELECT c.reloptions FROM pg_class c WHERE c.oid = v_tasks),
           (SELECT c.reloptions FROM pg_class c WHERE c.oid = v_attempts), clock_timestamp();

    -- The old tables become the first range: renamed, their own names (indexes, keys,
    -- triggers) freed for the parents.
    FOR r IN SELECT g.tgname, g.tgrelid::regclass AS rel FROM pg_trigger g
              WHERE g.tgrelid IN (v_tasks, v_attempts) AND NOT g.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, r.rel);
    END LOOP;
    FOR r IN SELECT i.indexrelid::regclass AS idx, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid IN (v_tasks, v_attempts) AND NOT i.indisprimary LOOP
        EXECUTE format('ALTER INDEX %s RENAME TO %I', r.idx, r.relname || '_p' || v_no);
    END LOOP;
    FOR r IN SELECT c.conname, c.conrelid::regclass AS rel, cl.relname
               FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid
              WHERE c.conrelid IN (v_tasks, v_attempts) AND c.contype IN ('p', 'f') LOOP
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname,
                       r.relname || '_p' || v_no || substr(r.conname, length(r.relname) + 1));
    END LOOP;
    ALTER TABLE taskforge.tasks ALTER COLUMN task_id DROP IDENTITY;
    EXECUTE format('ALTER TABLE taskforge.tasks RENAME TO %I', 'tasks_p' || v_no);
    EXECUTE format('ALTER TABLE taskforge.attempts RENAME TO %I', 'attempts_p' || v_no);
    EXECUTE format('CREATE SEQUENCE taskforge.tasks_task_id_seq AS bigint START WITH %s', v_next);

    -- The parents, then the rest of their definition.
    EXECUTE format('CREATE TABLE taskforge.tasks (LIKE taskforge.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (task_id)',
                   'tasks_p' || v_no);
    EXECUTE format('CREATE TABLE taskforge.attempts (LIKE taskforge.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (task_id)',
                   'attempts_p' || v_no);
    ALTER TABLE taskforge.tasks ALTER COLUMN task_id SET DEFAULT nextval('taskforge.tasks_task_id_seq');
    ALTER SEQUENCE taskforge.tasks_task_id_seq OWNED BY taskforge.tasks.task_id;
    FOREACH v_statement IN ARRAY v_before LOOP
        EXECUTE v_statement;
    END LOOP;
    EXECUTE format('ALTER TABLE taskforge.tasks ATTACH PARTITION taskforge.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                   'tasks_p' || v_no, v_end);
    EXECUTE format('ALTER TABLE taskforge.attempts ATTACH PARTITION taskforge.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                   'attempts_p' || v_no, v_end);
    FOREACH v_statement IN ARRAY v_after LOOP
        EXECUTE v_statement;
    END LOOP;
    INSERT INTO taskforge.history_partitions (partition_no, first_task_id, end_task_id, created_at)
    VALUES (v_no, NULL, v_end, clock_timestamp());

    FOR i IN 1..v_ahead LOOP
        PERFORM taskforge._tf_add_partition(v_end + (i - 1) * v_size);
    END LOOP;
    RETURN 1 + v_ahead;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_partition_history(numeric, numeric) IS
    'Convert tasks and attempts, with their data, to tables partitioned by task_id ranges (the old tables become the first range); retention then drops whole ranges. Once; owner only. Returns the ranges made. Errors: TF400, TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_partition_history(numeric, numeric) FROM PUBLIC;

-- >>> db/functions/tf_pause_queue.sql
-- taskforge.tf_pause_queue(queue text) -> boolean
--
-- Purpose:    pause a queue: from the commit on, tf_claim and tf_finalize_and_claim take no task
--             of this queue. Everything else goes on: submits to it succeed (the tasks wait
--             QUEUED), running tasks keep their leases and finalize normally, retries are
--             promoted, recovery runs. A claim that started before the pause committed may
--             still take tasks of the queue.
-- Parameters: queue  a queue name (it need not have tasks yet: a queue can be paused ahead).
-- Returns:    true when the queue was running and is now paused; false when it was already
--             paused (nothing changed).
-- Errors:     TF400 queue NULL or malformed. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (paused_at).
-- By hand:    yes; undo with tf_resume_queue.
CREATE OR REPLACE FUNCTION taskforge.tf_pause_queue(queue text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_row taskforge.queues%ROWTYPE;
BEGIN
    v_row := taskforge._tf_lock_queue(tf_pause_queue.queue);
    IF v_row.paused_at IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE taskforge.queues q SET paused_at = v_now, updated_at = v_now WHERE q.queue = v_row.queue;
    RETURN true;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_pause_queue(text) IS
    'Pause a queue: claims take none of its tasks until tf_resume_queue; submits still succeed. Returns true when the state changed. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_pause_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_pause_queue(text) TO taskforge_client;

-- >>> db/functions/tf_promote.sql
-- taskforge.tf_promote(max_tasks numeric DEFAULT 1000) -> TABLE(promoted int, next_due_at timestamptz)
--
-- Purpose:    move RETRYING tasks whose backoff has ended (scheduled_at <= now) back to QUEUED,
--             earliest first. Promotion creates no attempt: the next claim creates attempt N+1.
-- Parameters: max_tasks  whole number 1..100000, the batch size; call again while a full batch comes back.
-- Returns:    one row: promoted = tasks moved to QUEUED; next_due_at = earliest scheduled_at
--             of the RETRYING tasks left, or NULL (a scheduler can sleep until then); a task
--             skipped for a recorded error (below) counts with its retry_after instead.
-- Bad rows:   one row that cannot be promoted never stops the others, as in tf_recover: the
--             batch is written by one statement (taskforge._tf_promote_rows); when it raises an
--             error about a row (taskforge._tf_maintenance_row_error), the same locked batch is
--             written task by task, each in its own subtransaction; a task that fails is
--             recorded in maintenance_errors (tf_maintenance_errors; a WARNING the first time
--             the error is seen) and left out until its retry_after (60 s doubling to 1 h).
--             Its entry is deleted once the task is no longer a due RETRYING task.
-- Errors:     TF400 naming the argument; errors that are not about a row (a deadlock, a lock
--             timeout, a read-only server, a missing object) fail the call as before.
-- Locks:      FOR UPDATE SKIP LOCKED on due RETRYING rows (several schedulers split the work);
--             the maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry (due test, updated_at, retry_after).
-- By hand:    yes; it only does early what the scheduler would do.
CREATE OR REPLACE FUNCTION taskforge.tf_promote(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(promoted int, next_due_at timestamptz)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_skip bigint[];
    v_has_errors boolean;
    v_ids bigint[];
    v_id bigint;
    v_rows record;
    v_promoted int := 0;
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_next timestamptz;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_promote.max_tasks, 1, 100000);

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_promote';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(d.task_id ORDER BY d.scheduled_at, d.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.scheduled_at
              FROM taskforge.tasks t
             WHERE t.state = 'RETRYING' AND t.scheduled_at <= v_now AND t.task_id <> ALL (v_skip)
             ORDER BY t.scheduled_at
             LIMIT tf_promote.max_tasks
               FOR UPDATE OF t SKIP LOCKED) d;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            SELECT * INTO v_rows FROM taskforge._tf_promote_rows(v_ids, v_now);
            v_promoted := v_rows.promoted;
            v_queues := v_rows.queues;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    SELECT * INTO v_rows FROM taskforge._tf_promote_rows(ARRAY[v_id], v_now);
                    v_promoted := v_promoted + v_rows.promoted;
                    v_queues := v_queues || v_rows.queues;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_promote', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of tasks that are no longer due RETRYING tasks (promoted now, or changed by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_promote'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.state = 'RETRYING' AND t.scheduled_at <= v_now);
        SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_promote';
    END IF;

    SELECT t.scheduled_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RETRYING' AND t.task_id <> ALL (v_skip)
     ORDER BY t.scheduled_at
     LIMIT 1;

    RETURN QUERY SELECT v_promoted, least(v_next, v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_promote(numeric) IS
    'Move RETRYING tasks whose backoff ended to QUEUED (SKIP LOCKED; no attempt is created). Returns count and next_due_at. A task that fails to move is skipped and recorded (tf_maintenance_errors), the others are promoted. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_promote(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_promote(numeric) TO taskforge_scheduler;

-- >>> db/functions/tf_prune.sql
-- taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000) -> int
--
-- Purpose:    retention. Delete terminal tasks (SUCCEEDED, FAILED, CANCELLED) that finished
--             more than older_than_seconds ago, oldest first, at most max_tasks per call; their
--             attempts go with them (ON DELETE CASCADE) and their idempotency keys become free.
--             Call repeatedly while it returns max_tasks (the scheduler does, with --retain-days).
--             A parent (depends_on) is kept while one of its children is not terminal, so the
--             child's handler can still read its result; the dependency edges of the deleted
--             tasks are deleted with them.
--             On the partitioned history (tf_partition_history) it deletes no row: it drops the
--             oldest whole task-id range whose tasks all qualify, one range a call
--             (taskforge._tf_drop_partitions, whose header has the tests, the locks and the
--             pause they cost), and max_tasks does not apply: the count returned is the range's
--             tasks, any size; calling again while it is at least max_tasks drops the next.
-- Parameters: older_than_seconds  0..3153600000 seconds (100 years).
--             max_tasks           whole number 1..100000.
-- Returns:    the number of tasks deleted.
-- Bad rows:   one task that cannot be deleted never stops the others, as in tf_recover: the
--             batch is deleted by one statement (taskforge._tf_prune_rows); when it raises an
--             error about a row (taskforge._tf_maintenance_row_error), the same locked batch is
--             deleted task by task, each in its own subtransaction; a task that fails is
--             recorded in maintenance_errors (tf_maintenance_errors; a WARNING the first time
--             the error is seen) and left out until its retry_after (60 s doubling to 1 h), so
--             a call that returns less than max_tasks still means the old history is gone except
--             the recorded tasks. Its entry is deleted once the task is deleted or not terminal.
-- Errors:     TF400 naming the argument; errors that are not about a row (a deadlock, a lock
--             timeout, a read-only server, a missing object) fail the call as before.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen rows (a task being retried is skipped); the
--             maintenance_errors entries it writes. On the partitioned history, those of
--             taskforge._tf_drop_partitions (ACCESS EXCLUSIVE on tasks and attempts while a
--             range is tested exactly and dropped); its bad-row fallback does not apply there.
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() at entry (the cutoff, retry_after).
-- By hand:    yes; what it deletes is gone (take a backup if you need the history).
CREATE OR REPLACE FUNCTION taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_skip bigint[];
    v_has_errors boolean;
    v_ids bigint[];
    v_id bigint;
    v_deleted int := 0;
    v_sqlstate text;
    v_message text;
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_tasks', tf_prune.max_tasks, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune.older_than_seconds);
    IF EXISTS (SELECT 1 FROM taskforge.history_layout) THEN
        RETURN taskforge._tf_drop_partitions(v_cutoff);  -- the partitioned history: whole ranges
    END IF;

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_prune';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(v.task_id ORDER BY v.finished_at, v.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.finished_at
              FROM taskforge.tasks t
             WHERE t.finished_at < v_cutoff AND t.task_id <> ALL (v_skip)
               -- A parent stays while a child is not terminal (its handler may read the result).
               AND (NOT t.has_children
                    OR NOT EXISTS (SELECT 1 FROM taskforge.task_dependencies d
                                     JOIN taskforge.tasks c ON c.task_id = d.child_task_id
                                    WHERE d.parent_task_id = t.task_id AND c.finished_at IS NULL))
             ORDER BY t.finished_at
             LIMIT tf_prune.max_tasks
               FOR UPDATE OF t SKIP LOCKED) v;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            v_deleted := taskforge._tf_prune_rows(v_ids, v_cutoff);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            v_deleted := 0;
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    v_deleted := v_deleted + taskforge._tf_prune_rows(ARRAY[v_id], v_cutoff);
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_prune', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    IF v_has_errors THEN
        -- Entries of tasks that are gone (deleted now) or no longer terminal (retried by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_prune'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.finished_at IS NOT NULL);
    END IF;
    RETURN v_deleted;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune(double precision, numeric) IS
    'Retention: delete terminal tasks finished more than older_than_seconds ago (oldest first, at most max_tasks) with their attempts; frees their idempotency keys. A task that fails to delete is skipped and recorded (tf_maintenance_errors), the others are deleted. Returns the count. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune(double precision, numeric) TO taskforge_scheduler;

-- >>> db/functions/tf_prune_workers.sql
-- taskforge.tf_prune_workers(older_than_seconds double precision, max_rows numeric DEFAULT 10000)
--   -> TABLE(workers int, schedulers int)
--
-- Purpose:    retention of process records. tf_register_worker adds a workers row per worker
--             process start and tf_scheduler_heartbeat a schedulers row per scheduler process
--             start; this deletes the rows of processes that are gone and were last heard of
--             more than older_than_seconds ago (stopped_at, else last_heartbeat_at):
--               a worker whose liveness in tf_workers is stopped (deregistered) or stale (no
--               heartbeat for more than three of its intervals), that no attempt names and
--               that owns no RUNNING task. Attempts keep their worker's row until tf_prune
--               deletes them with their task, so run tf_prune first;
--               a scheduler whose liveness in tf_schedulers is stopped or stale.
--             The liveness rule is the views' own (this function reads them): a live process
--             is never deleted, whatever older_than_seconds. Oldest first, at most max_rows
--             workers and at most max_rows schedulers per call; call again while either count
--             is max_rows (the scheduler does, after tf_prune, with --retain-days).
-- Parameters: older_than_seconds  0..3153600000 seconds (100 years).
--             max_rows            whole number 1..100000, the batch size of each table.
-- Returns:    one row: workers = worker rows deleted; schedulers = scheduler rows deleted.
-- Errors:     TF400 naming the argument; nothing is deleted then.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen workers and schedulers rows: a row being
--             heartbeated or deregistered right now, or held by a claim in progress (the
--             foreign-key lock of its new attempt), is skipped and looked at on the next call.
--             The locked workers are checked for attempts and owned tasks again in a statement
--             of its own (a fresh snapshot), so an attempt committed after the candidates were
--             chosen keeps its worker. A claim by a deleted worker that started before the
--             delete committed fails with 23503 (foreign key) instead of TF404; only a worker
--             silent for longer than older_than_seconds can be in that position.
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter). workers and
--             schedulers are read in full: there is no index on their heartbeat columns, so
--             that every heartbeat stays a HOT update. Whether attempts or a task name a
--             worker can be looked up in attempts_worker_idx and tasks_owner_idx.
-- Clock:      clock_timestamp() at entry for the cutoff; liveness is the views' (now(), the
--             start of the caller's transaction: inside a long transaction a process has to
--             have been stale at its start, which deletes less, never more).
-- By hand:    yes; what it deletes is gone. A process whose row was deleted is unknown from
--             then on: a worker that comes back gets TF404 from its next heartbeat or claim
--             (the Python worker then stops), a scheduler's next beat records a new start.
CREATE OR REPLACE FUNCTION taskforge.tf_prune_workers(
    older_than_seconds double precision, max_rows numeric DEFAULT 10000)
RETURNS TABLE(workers int, schedulers int)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_limit int;
    v_locked uuid[];
    v_workers int;
    v_schedulers int;
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune_workers.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_rows', tf_prune_workers.max_rows, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune_workers.older_than_seconds);
    v_limit := tf_prune_workers.max_rows;

    -- Workers: choose and lock the candidates, oldest first (FOR UPDATE OF the view locks its
    -- workers rows) ...
    SELECT array_agg(c.worker_id) INTO v_locked
      FROM (SELECT v.worker_id
              FROM taskforge.tf_workers v
             WHERE v.liveness <> 'alive'
               AND coalesce(v.stopped_at, v.last_heartbeat_at) < v_cutoff
               AND NOT EXISTS (SELECT 1 FROM taskforge.attempts a WHERE a.worker_id = v.worker_id)
               AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.owner_worker_id = v.worker_id)
             ORDER BY coalesce(v.stopped_at, v.last_heartbeat_at), v.worker_id
             LIMIT v_limit
               FOR UPDATE OF v SKIP LOCKED) c;
    -- ... then delete those that no attempt or task names in a snapshot taken under the locks
    -- (a claim that committed in between left an attempt; one not yet committed holds a lock
    -- that made us skip the row). Locked rows cannot change, so liveness needs no new look.
    DELETE FROM taskforge.workers w
     WHERE w.worker_id = ANY (v_locked)
       AND NOT EXISTS (SELECT 1 FROM taskforge.attempts a WHERE a.worker_id = w.worker_id)
       AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.owner_worker_id = w.worker_id);
    GET DIAGNOSTICS v_workers = ROW_COUNT;

    -- Schedulers: nothing refers to them.
    WITH victims AS (
        SELECT v.scheduler_id
          FROM taskforge.tf_schedulers v
         WHERE v.liveness <> 'alive'
           AND coalesce(v.stopped_at, v.last_heartbeat_at) < v_cutoff
         ORDER BY coalesce(v.stopped_at, v.last_heartbeat_at), v.scheduler_id
         LIMIT v_limit
           FOR UPDATE OF v SKIP LOCKED
    )
    DELETE FROM taskforge.schedulers s
     USING victims v
     WHERE s.scheduler_id = v.scheduler_id;
    GET DIAGNOSTICS v_schedulers = ROW_COUNT;

    RETURN QUERY SELECT v_workers, v_schedulers;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) IS
    'Retention of process records: delete workers and schedulers rows stopped or stale (tf_workers, tf_schedulers) and last heard of more than older_than_seconds ago (oldest first, at most max_rows of each); a worker that attempts name or that owns a RUNNING task stays. Returns (workers, schedulers) deleted. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) TO taskforge_scheduler;

-- >>> db/functions/tf_recover.sql
-- taskforge.tf_recover(max_tasks numeric DEFAULT 1000)
--   -> TABLE(recovered int, failed int, next_lease_expiry timestamptz)
--
-- Purpose:    take back tasks whose owner stopped renewing. For up to max_tasks RUNNING tasks
--             whose lease has expired (oldest deadline first): the current attempt becomes
--             ABANDONED (finished_at records when, so recovery lag = finished_at -
--             lease_expires_at is queryable in tf_attempts) with outcome timed_out when the
--             lease had reached the attempt's deadline (tasks.deadline_at: the handler ran out
--             of time), else lease_expired (its worker stopped renewing), and the task is
--               QUEUED at once (no backoff) when budget remains,
--               CANCELLED when a cancel was requested while it ran,
--               FAILED (last_error type lease_expired or timed_out) when its budget is spent.
--             A row whose lease is still valid is never touched: expiry is tested in the
--             candidate scan and again on the locked row version.
-- Parameters: max_tasks  whole number 1..100000, the batch size; call again while a full batch comes back.
-- Returns:    one row: recovered = tasks put back to QUEUED; failed = tasks ended (FAILED or
--             CANCELLED); next_lease_expiry = earliest lease deadline still running, or NULL
--             (a scheduler can sleep until then); a task skipped for a recorded error (below)
--             counts with its retry_after instead of its lease.
-- Bad rows:   one row that cannot be recovered never stops the others. The batch is written by
--             one set-based statement (taskforge._tf_recover_rows); when it raises an error about
--             a row (taskforge._tf_maintenance_row_error: a CHECK, a trigger, a value; not a
--             deadlock, a lock timeout, a read-only server or a missing object, which fail the
--             call as before), the same locked batch is written task by task, each in its own
--             subtransaction: a task that fails is rolled back alone, recorded in
--             maintenance_errors (tf_maintenance_errors; a WARNING the first time the error is
--             seen, via taskforge._tf_maintenance_failed) and left out of later calls until its
--             retry_after (60 s doubling to 1 h), so it neither slows every pass nor is met
--             first again by the next batch. Its entry is deleted once the task no longer
--             needs recovery (recovered at last, or changed by hand). The fallback is bounded by
--             the batch: at most max_tasks subtransactions, only in the call that met the row.
-- Errors:     TF400 naming the argument; errors that are not about a row fail the call.
-- Locks:      FOR UPDATE SKIP LOCKED on expired tasks rows: a row being renewed or finalized
--             right now is skipped (its owner is alive) and looked at on the next call; the
--             maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit);
--             pg_notify('taskforge_finished', task_id) for each task submitted with
--             notify_finished that it ends FAILED or CANCELLED (the row trigger of
--             taskforge._tf_notify_finished).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry: the expiry test, the abandon time, retry_after.
-- By hand:    yes; it only acts on leases that have already expired.
CREATE OR REPLACE FUNCTION taskforge.tf_recover(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(recovered int, failed int, next_lease_expiry timestamptz)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_skip bigint[];
    v_has_errors boolean;
    v_ids bigint[];
    v_id bigint;
    v_rows record;
    v_requeued int := 0;
    v_ended int := 0;
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_next timestamptz;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_recover.max_tasks, 1, 100000);

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_recover';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    -- FOR UPDATE returns the latest version of each row and re-checks the WHERE on it.
    SELECT coalesce(array_agg(c.task_id ORDER BY c.lease_expires_at, c.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.lease_expires_at
              FROM taskforge.tasks t
             WHERE t.state = 'RUNNING' AND t.lease_expires_at <= v_now AND t.task_id <> ALL (v_skip)
             ORDER BY t.lease_expires_at
             LIMIT tf_recover.max_tasks
               FOR UPDATE OF t SKIP LOCKED) c;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            SELECT * INTO v_rows FROM taskforge._tf_recover_rows(v_ids, v_now);
            v_requeued := v_rows.requeued;
            v_ended := v_rows.ended;
            v_queues := v_rows.queues;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    SELECT * INTO v_rows FROM taskforge._tf_recover_rows(ARRAY[v_id], v_now);
                    v_requeued := v_requeued + v_rows.requeued;
                    v_ended := v_ended + v_rows.ended;
                    v_queues := v_queues || v_rows.queues;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_recover', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of tasks that need no recovery any more (recovered now, or changed by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_recover'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.state = 'RUNNING' AND t.lease_expires_at <= v_now);
        SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_recover';
    END IF;

    SELECT t.lease_expires_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RUNNING' AND t.task_id <> ALL (v_skip)
     ORDER BY t.lease_expires_at
     LIMIT 1;

    RETURN QUERY SELECT v_requeued, v_ended, least(v_next, v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_recover(numeric) IS
    'Recover RUNNING tasks with expired leases (SKIP LOCKED, expiry re-checked under the lock): attempt ABANDONED (outcome lease_expired, or timed_out when the lease reached the attempt deadline); task QUEUED if budget remains, else FAILED (CANCELLED if cancel was requested). Returns counts and next_lease_expiry. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. A task that fails to recover is skipped and recorded (tf_maintenance_errors), the others are recovered. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_recover(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_recover(numeric) TO taskforge_scheduler;

-- >>> db/functions/tf_register_task_type.sql
-- taskforge.tf_register_task_type(task_type text, backoff_base_seconds double precision DEFAULT 2,
--     backoff_cap_seconds double precision DEFAULT 300, backoff_jitter double precision DEFAULT 0.2,
--     description text DEFAULT NULL, timeout_seconds double precision DEFAULT NULL) -> void
--
-- Purpose:    allow a task type (tf_submit rejects unknown types) or update its retry policy
--             and attempt timeout. The backoff policy applies to retryable failures finalized
--             after the change; the timeout to tasks submitted after it (each task keeps the
--             timeout it was submitted with).
-- Parameters: task_type             ^[a-z][a-z0-9_.-]{0,62}$
--             backoff_base_seconds  0..86400 seconds   backoff_cap_seconds  0..86400 seconds
--             backoff_jitter        0..1               description          free text or NULL
--                                                       (NULL keeps the current description)
--             timeout_seconds       0 < s <= 604800 (7 days): each attempt's deadline from its
--                                   claim; no lease is granted past it, and recovery records
--                                   the attempt timed_out (retried under the task's budget).
--                                   NULL = no deadline. Appended to the first version; like the
--                                   backoff settings, a call without it sets the default (NULL).
-- Returns:    nothing.
-- Errors:     TF400 naming the argument.
-- Locks:      the task_types row (INSERT ... ON CONFLICT DO UPDATE).
-- Clock:      clock_timestamp() for created_at/updated_at.
-- By hand:    yes, by the owner or a DBA; no TaskForge role may call it.
CREATE OR REPLACE FUNCTION taskforge.tf_register_task_type(
    task_type text,
    backoff_base_seconds double precision DEFAULT 2,
    backoff_cap_seconds double precision DEFAULT 300,
    backoff_jitter double precision DEFAULT 0.2,
    description text DEFAULT NULL,
    timeout_seconds double precision DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    PERFORM taskforge._tf_check_name('task_type', tf_register_task_type.task_type, 'task_type');
    PERFORM taskforge._tf_check_seconds('backoff_base_seconds', tf_register_task_type.backoff_base_seconds, 0, 86400);
    PERFORM taskforge._tf_check_seconds('backoff_cap_seconds', tf_register_task_type.backoff_cap_seconds, 0, 86400);
    IF tf_register_task_type.backoff_jitter IS NULL OR tf_register_task_type.backoff_jitter = 'NaN'::float8
       OR tf_register_task_type.backoff_jitter < 0 OR tf_register_task_type.backoff_jitter > 1 THEN
        PERFORM taskforge._tf_invalid('backoff_jitter', format('must be between 0 and 1, got %s',
            coalesce(tf_register_task_type.backoff_jitter::text, 'NULL')));
    END IF;
    IF tf_register_task_type.timeout_seconds IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('timeout_seconds', tf_register_task_type.timeout_seconds, 0, 604800, true);
    END IF;

    INSERT INTO taskforge.task_types AS tt
           (task_type, backoff_base_seconds, backoff_cap_seconds, backoff_jitter, description, timeout_seconds,
            created_at, updated_at)
    VALUES (tf_register_task_type.task_type, tf_register_task_type.backoff_base_seconds,
            tf_register_task_type.backoff_cap_seconds, tf_register_task_type.backoff_jitter,
            tf_register_task_type.description, tf_register_task_type.timeout_seconds, v_now, v_now)
    ON CONFLICT (task_type) DO UPDATE
       SET backoff_base_seconds = EXCLUDED.backoff_base_seconds,
           backoff_cap_seconds  = EXCLUDED.backoff_cap_seconds,
           backoff_jitter       = EXCLUDED.backoff_jitter,
           description          = coalesce(EXCLUDED.description, tt.description),
           timeout_seconds      = EXCLUDED.timeout_seconds,
           updated_at           = EXCLUDED.updated_at;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_register_task_type(text, double precision, double precision, double precision, text, double precision) IS
    'Owner/DBA only: allow a task type or update its retry backoff policy and attempt timeout (seconds; NULL = none). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_register_task_type(
    text, double precision, double precision, double precision, text, double precision
) FROM PUBLIC;

-- >>> db/functions/tf_register_worker.sql
-- taskforge.tf_register_worker(name text, hostname text DEFAULT NULL, pid numeric DEFAULT NULL,
--     queues text[] DEFAULT NULL, task_types text[] DEFAULT NULL,
--     heartbeat_seconds double precision DEFAULT 5) -> uuid
--
-- Purpose:    record one worker process start. Call once per process start; names may repeat
--             (the returned id is what identifies the process). heartbeat_seconds is how often
--             the process promises to call tf_heartbeat: tf_workers reports it "stale" after
--             three missed beats.
-- Parameters: name 1..200 characters. hostname (at most 255 characters), pid (a whole number
--             1..2147483647; declared numeric, so any number a caller writes gets TF400), queues
--             (queue names) and task_types (type names) are informational: NULL = unknown/any.
--             heartbeat_seconds 0 < s <= 3600.
-- Returns:    a fresh worker_id (uuid, gen_random_uuid()).
-- Errors:     TF400 naming the argument.
-- Locks:      none beyond the inserted row.
-- Clock:      clock_timestamp() for started_at and the first heartbeat.
-- By hand:    yes (it only inserts a workers row).
CREATE OR REPLACE FUNCTION taskforge.tf_register_worker(
    name text,
    hostname text DEFAULT NULL,
    pid numeric DEFAULT NULL,
    queues text[] DEFAULT NULL,
    task_types text[] DEFAULT NULL,
    heartbeat_seconds double precision DEFAULT 5)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_id uuid := gen_random_uuid();
BEGIN
    IF tf_register_worker.name IS NULL OR length(tf_register_worker.name) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid('name', 'must be 1 to 200 characters');
    END IF;
    IF length(tf_register_worker.hostname) > 255 THEN
        PERFORM taskforge._tf_invalid('hostname', format('must be at most 255 characters, got %s',
            length(tf_register_worker.hostname)));
    END IF;
    IF tf_register_worker.pid IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('pid', tf_register_worker.pid, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_names('queues', tf_register_worker.queues, 'queue');
    PERFORM taskforge._tf_check_names('task_types', tf_register_worker.task_types, 'task_type');
    PERFORM taskforge._tf_check_seconds('heartbeat_seconds', tf_register_worker.heartbeat_seconds, 0, 3600, true);
    INSERT INTO taskforge.workers
           (worker_id, name, hostname, pid, queues, task_types, heartbeat_seconds, started_at, last_heartbeat_at)
    VALUES (v_id, tf_register_worker.name, tf_register_worker.hostname, tf_register_worker.pid,
            tf_register_worker.queues, tf_register_worker.task_types, tf_register_worker.heartbeat_seconds,
            v_now, v_now);
    RETURN v_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_register_worker(text, text, numeric, text[], text[], double precision) IS
    'Record a worker process start; returns a fresh worker_id (uuid). heartbeat_seconds drives the stale rule of tf_workers. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_register_worker(text, text, numeric, text[], text[], double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_register_worker(
    text, text, numeric, text[], text[], double precision
) TO taskforge_worker;

-- >>> db/functions/tf_renew.sql
-- taskforge.tf_renew(task_id numeric, worker_id uuid, attempt_number numeric,
--     lease_seconds double precision DEFAULT 30)
--   -> TABLE(renewed boolean, lease_expires_at timestamptz, cancel_requested boolean, reason text)
--
-- Purpose:    extend the lease of a task the caller still owns, to now + lease_seconds, but
--             never past the attempt's deadline (tasks.deadline_at, set at claim from the
--             task type's timeout_seconds): once the deadline has passed the lease is not
--             extended and reason says timed_out, so a handler that ignores its deadline cannot
--             hold the task; recovery then records the attempt timed_out.
--             Guard (taskforge._tf_guard): RUNNING, same attempt, same owner, deadline not
--             passed, lease not yet expired. A lease that has expired is lost even if nobody recovered it yet: the
--             worker must stop renewing, and may still offer its result to tf_finalize, which
--             will refuse it (the scheduler requeues the task).
-- Parameters: task_id, worker_id, attempt_number  as returned by tf_claim.
--             task_id and attempt_number are declared numeric (a bigint and an int in
--             fact) so that any number a caller writes gets TF400 naming it, not 42883.
--             lease_seconds  0 < s <= 86400 seconds.
-- Returns:    one row. renewed = true with the new lease deadline (reason NULL), or
--             renewed = false with lease_expires_at NULL and reason not_running |
--             stale_attempt | not_owner | timed_out | lease_expired when the guard fails.
--             cancel_requested tells the handler that tf_cancel was called for the task (it
--             should stop early and finalize). (reason was appended to the first version.)
-- Errors:     TF400 naming the argument; TF404 no such task.
-- Locks:      the tasks row (FOR UPDATE; waits for a concurrent finalize or recover of the same
--             task), then the matching attempts row.
-- Writes:     through taskforge._tf_renew_attempts, as a batch of one (tf_renew_many's path).
-- Clock:      clock_timestamp() read after the row lock is held (a wait for the lock may
--             outlive the lease), for the guard and the new deadline.
-- By hand:    only to keep a task you own; it can keep a hung worker's task alive.
CREATE OR REPLACE FUNCTION taskforge.tf_renew(
    task_id numeric,
    worker_id uuid,
    attempt_number numeric,
    lease_seconds double precision DEFAULT 30)
RETURNS TABLE(renewed boolean, lease_expires_at timestamptz, cancel_requested boolean, reason text)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_attempt_number int;
BEGIN
    PERFORM taskforge._tf_check_fencing(tf_renew.task_id, tf_renew.worker_id, tf_renew.attempt_number);
    v_task_id := tf_renew.task_id;                -- checked: a whole number within bigint
    v_attempt_number := tf_renew.attempt_number;  -- checked: 1 .. 2147483647
    IF tf_renew.lease_seconds IS NULL OR NOT (tf_renew.lease_seconds > 0 AND tf_renew.lease_seconds <= 86400) THEN
        PERFORM taskforge._tf_check_seconds('lease_seconds', tf_renew.lease_seconds, 0, 86400, true);
    END IF;

    -- Wait for the row (TF404 when there is none), then renew through the batch path, whose
    -- clock is read now that the row is ours: the lock wait may have outlived the lease.
    PERFORM taskforge._tf_lock_task(v_task_id);
    RETURN QUERY
    SELECT r.renewed, r.lease_expires_at, r.cancel_requested, r.reason
      FROM taskforge._tf_renew_attempts(tf_renew.worker_id, ARRAY[v_task_id], ARRAY[v_attempt_number],
                                        tf_renew.lease_seconds) AS r;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_renew(numeric, uuid, numeric, double precision) IS
    'Extend the lease of an owned RUNNING task to now + lease_seconds, never past its attempt deadline. Guard: same owner, same attempt, deadline not passed, lease unexpired; else renewed=false with the reason. Reports cancel_requested. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_renew(numeric, uuid, numeric, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_renew(numeric, uuid, numeric, double precision) TO taskforge_worker;

-- >>> db/functions/tf_renew_many.sql
-- taskforge.tf_renew_many(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     lease_seconds double precision DEFAULT 30)
--   -> TABLE(task_id bigint, attempt_number int, renewed boolean, lease_expires_at timestamptz,
--            cancel_requested boolean, reason text)
--
-- Purpose:    the batch form of tf_renew: extend the leases of up to 1000 attempts one worker
--             still owns to now + lease_seconds (never past an attempt's deadline), in one
--             statement. Element i is (task_ids[i], attempt_numbers[i]); each obeys tf_renew's
--             guard (RUNNING, same attempt, same owner, deadline not passed, lease not yet
--             expired). It never waits for a row lock: a task whose row
--             another transaction holds is skipped (SKIP LOCKED) and reported busy, with its
--             lease unchanged and not lost; renew it again shortly.
-- Parameters: worker_id        the worker that owns the attempts.
--             task_ids         1..1000 task ids (whole numbers within bigint), no NULL, no task twice.
--             attempt_numbers  as many attempt numbers (whole numbers 1..2147483647).
--             Both arrays are declared numeric[] so that any number a caller writes gets TF400
--             naming the element, not 42883; they are converted once checked.
--             lease_seconds    0 < s <= 86400 seconds.
-- Returns:    one row per element, in input order: renewed, the new lease deadline (NULL
--             unless renewed; never past the attempt's deadline_at), cancel_requested
--             (tf_cancel was called; as last committed for busy rows, NULL for not_found), and
--             reason NULL when renewed, else busy | not_found | not_running | stale_attempt |
--             not_owner | timed_out | lease_expired. All but busy mean the lease is lost.
-- Errors:     TF400 naming the argument (and element). Nothing is written when one is raised.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks rows (never waits), then their attempt rows.
-- Writes:     taskforge._tf_renew_attempts, the one renewal path (tf_renew takes it too).
-- Clock:      clock_timestamp() read once the rows are locked: guard and new deadline.
-- By hand:    only to keep tasks you own; it can keep a hung worker's tasks alive.
CREATE OR REPLACE FUNCTION taskforge.tf_renew_many(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    lease_seconds double precision DEFAULT 30)
RETURNS TABLE(task_id bigint, attempt_number int, renewed boolean, lease_expires_at timestamptz,
              cancel_requested boolean, reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF NOT coalesce(taskforge._tf_valid_batch_of_one(tf_renew_many.worker_id, tf_renew_many.task_ids,
                                                  tf_renew_many.attempt_numbers, NULL, NULL, NULL, false), false) THEN
        -- Not a certainly valid batch of one: the full check, which raises the precise error.
        PERFORM taskforge._tf_check_batch(tf_renew_many.worker_id, tf_renew_many.task_ids, tf_renew_many.attempt_numbers);
    END IF;
    IF tf_renew_many.lease_seconds IS NULL
       OR NOT (tf_renew_many.lease_seconds > 0 AND tf_renew_many.lease_seconds <= 86400) THEN
        PERFORM taskforge._tf_check_seconds('lease_seconds', tf_renew_many.lease_seconds, 0, 86400, true);
    END IF;
    -- Checked: task_ids are whole numbers within bigint, attempt numbers within int.
    RETURN QUERY
    SELECT * FROM taskforge._tf_renew_attempts(tf_renew_many.worker_id, tf_renew_many.task_ids::bigint[],
                                               tf_renew_many.attempt_numbers::int[], tf_renew_many.lease_seconds);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) IS
    'Batch tf_renew: one row per element in input order, same guard; rows locked elsewhere are skipped (SKIP LOCKED) and reported busy (lease unchanged, not lost). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) TO taskforge_worker;

-- >>> db/functions/tf_resume_queue.sql
-- taskforge.tf_resume_queue(queue text) -> boolean
--
-- Purpose:    resume a paused queue: claims take its tasks again from the commit on, and idle
--             workers listening for the queue are woken (one NOTIFY on channel taskforge with the
--             queue name, sent at commit).
-- Parameters: queue  a queue name.
-- Returns:    true when the queue was paused and now runs; false when it was not paused
--             (nothing changed, nothing sent).
-- Errors:     TF400 queue NULL or malformed. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_resume_queue(queue text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_row taskforge.queues%ROWTYPE;
BEGIN
    v_row := taskforge._tf_lock_queue(tf_resume_queue.queue);
    IF v_row.paused_at IS NULL THEN
        RETURN false;
    END IF;
    UPDATE taskforge.queues q SET paused_at = NULL, updated_at = v_now WHERE q.queue = v_row.queue;
    PERFORM taskforge._tf_notify_queues(ARRAY[v_row.queue]);
    RETURN true;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_resume_queue(text) IS
    'Resume a paused queue (claims take its tasks again; idle workers are notified). Returns true when the state changed. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_resume_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_resume_queue(text) TO taskforge_client;

-- >>> db/functions/tf_retry.sql
-- taskforge.tf_retry(task_id numeric, extra_attempts numeric DEFAULT 1)
--   -> TABLE(task_state text, max_attempts int)
--
-- Purpose:    operator replay of a dead-lettered task (FAILED or CANCELLED) back to QUEUED, due
--             now. History is kept: earlier attempts stay as they were and the next claim
--             creates attempt N+1. The budget becomes max(max_attempts, attempts so far +
--             extra_attempts), so at least extra_attempts further attempts are allowed.
--             The task keeps its id, idempotency key and fingerprint; result, last_error and
--             the cancel request are cleared.
--             A task with parents (depends_on) goes back to BLOCKED instead when a parent is
--             not SUCCEEDED, and a parent FAILED or CANCELLED refuses the retry (TF409: redrive
--             the parent first). A redriven task that has children brings back the children it
--             cancelled ('dependency_failed') as BLOCKED, and so on down the graph
--             (taskforge._tf_release_children): tf_retry of a failed parent replays its flow.
--             A task with an ordering key is refused (TF409) while another task of its key is
--             RUNNING: redriven, it is the key's head again and would run beside that one.
-- Parameters: task_id  a whole number within bigint (declared numeric: any number a caller
--             writes gets TF400 naming it, not 42883); extra_attempts  whole number 1..1000.
-- Returns:    one row: 'QUEUED' (or 'BLOCKED', above) and the new max_attempts.
-- Errors:     TF400 naming the argument (also when the budget would pass 10000);
--             TF404 no such task; TF409 the task is QUEUED, RUNNING, RETRYING or SUCCEEDED
--             (a success is never replayed; cancel first to replay waiting work), or a
--             parent of it is FAILED or CANCELLED, or a task of its ordering key is RUNNING.
-- Locks:      the tasks row FOR UPDATE; with parents, their rows FOR SHARE; with an ordering
--             key, its taskforge.ordering_keys row FOR UPDATE.
-- Notify:     pg_notify('taskforge', queue) (on commit).
-- Clock:      clock_timestamp() at entry.
-- By hand:    yes; it is the dead-letter redrive.
CREATE OR REPLACE FUNCTION taskforge.tf_retry(task_id numeric, extra_attempts numeric DEFAULT 1)
RETURNS TABLE(task_state text, max_attempts int)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_now timestamptz := clock_timestamp();
    v_task taskforge.tasks%ROWTYPE;
    v_budget int;
    v_pending int := 0;
    v_failed_parent bigint;
    v_running bigint;
    v_state text := 'QUEUED';
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_retry.task_id);
    v_task_id := tf_retry.task_id;  -- checked: a whole number within bigint
    PERFORM taskforge._tf_check_int('extra_attempts', tf_retry.extra_attempts, 1, 1000);
    v_task := taskforge._tf_lock_task(v_task_id);
    IF v_task.state NOT IN ('FAILED', 'CANCELLED') THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: task %s is %s; only FAILED or CANCELLED tasks can be retried',
                             v_task_id, v_task.state),
            COLUMN = 'task_id';
    END IF;
    v_budget := greatest(v_task.max_attempts, v_task.attempt_count + tf_retry.extra_attempts);
    IF v_budget > 10000 THEN
        PERFORM taskforge._tf_invalid('extra_attempts', format('would raise max_attempts to %s; the limit is 10000', v_budget));
    END IF;

    -- Parents (depends_on): locked, then judged.
    PERFORM 1 FROM taskforge.tasks p
     WHERE p.task_id IN (SELECT d.parent_task_id FROM taskforge.task_dependencies d WHERE d.child_task_id = v_task_id)
     ORDER BY p.task_id FOR SHARE OF p;
    SELECT count(*) FILTER (WHERE p.state <> 'SUCCEEDED'),
           min(p.task_id) FILTER (WHERE p.state IN ('FAILED', 'CANCELLED'))
      INTO v_pending, v_failed_parent
      FROM taskforge.task_dependencies d JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
     WHERE d.child_task_id = v_task_id;
    IF v_failed_parent IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: task %s depends on task %s, which is %s; retry that one first',
                             v_task_id, v_failed_parent, taskforge._tf_task_state(v_failed_parent)),
            COLUMN = 'task_id';
    END IF;
    IF v_pending > 0 THEN
        v_state := 'BLOCKED';
    END IF;
    -- An ordering key: under its row lock (the one its claims take), no task of the key may be
    -- RUNNING, or the redriven task, the key's head again, would run beside it.
    IF v_task.ordering_key IS NOT NULL THEN
        PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = v_task.ordering_key FOR UPDATE;
        SELECT min(e.task_id) INTO v_running FROM taskforge.tasks e
         WHERE e.state = 'RUNNING' AND e.ordering_key = v_task.ordering_key;
        IF v_running IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'TF409',
                MESSAGE = format('task_id: task %s of the same ordering key %s is RUNNING; retry task %s once it has ended',
                                 v_running, quote_literal(v_task.ordering_key), v_task_id),
                COLUMN = 'task_id';
        END IF;
    END IF;

    UPDATE taskforge.tasks t
       SET state = v_state, parents_pending = v_pending, max_attempts = v_budget, scheduled_at = v_now,
           finished_at = NULL, result = NULL, last_error = NULL,
           cancel_requested_at = NULL, cancel_reason = NULL, updated_at = v_now
     WHERE t.task_id = v_task_id;
    IF v_state = 'QUEUED' THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[v_task.queue]);
    END IF;
    RETURN QUERY SELECT v_state, v_budget;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_retry(numeric, numeric) IS
    'Dead-letter redrive: FAILED/CANCELLED -> QUEUED (BLOCKED while a parent is unfinished; TF409 if one failed; its cancelled dependants come back) with budget max(max_attempts, attempts + extra_attempts); history kept. Errors: TF400, TF404, TF409 (state does not allow it).';
REVOKE ALL ON FUNCTION taskforge.tf_retry(numeric, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_retry(numeric, numeric) TO taskforge_client;

-- >>> db/functions/tf_schedule_periodic.sql
-- taskforge.tf_schedule_periodic(name text, cron text, task_type text, payload jsonb DEFAULT '{}',
--     queue text DEFAULT 'default', priority numeric DEFAULT 0, max_attempts numeric DEFAULT 3,
--     timezone text DEFAULT 'UTC')
--   -> TABLE(next_fire_at timestamptz, created boolean)
--
-- Purpose:    create or replace a periodic schedule: at every tick of `cron`, read on the wall
--             clock of `timezone`, tf_enqueue_periodic (run by the scheduler) submits one task
--             with task_type, payload, queue, priority and max_attempts.
--             Replacing a schedule with the same cron and timezone keeps its next tick, so a
--             deploy that declares its schedules again neither skips nor repeats a tick; a new
--             cron or timezone starts from the first tick after now. Tasks already enqueued are
--             not touched.
-- Parameters: name          the schedule's key, taskforge._tf_name_pattern('schedule'):
--                           ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
--             cron          a standard 5-field expression, "minute hour day-of-month month
--                           day-of-week" (taskforge._tf_cron_parse: *, lists, ranges, steps,
--                           JAN-DEC, SUN-SAT, 0 and 7 = Sunday, the Vixie day rule, @daily...).
--             task_type .. max_attempts  the request, validated with exactly tf_submit's rules
--                           (taskforge._tf_submit_one); priority and max_attempts are numeric,
--                           as in tf_submit, so any number a caller writes gets TF400.
--             timezone      a name of pg_timezone_names, case as listed ('UTC', 'Europe/Berlin').
--                           DST: a repeated wall-clock time fires once, at its first
--                           occurrence; a skipped one fires when the clocks jump
--                           (taskforge._tf_cron_fire_at).
-- Returns:    one row: the next tick (the instant its task will be enqueued) and whether this
--             call created the schedule (false: it replaced one).
-- Errors:     TF400 naming the argument (nothing written); a bad cron names the cron field,
--             e.g. "cron: minute field '61': 61 is out of range 0-59".
-- Locks:      the schedule row (INSERT ... ON CONFLICT DO UPDATE; waits for a scheduler that
--             is enqueueing it).
-- Clock:      clock_timestamp() once at entry (the first tick is after it).
-- By hand:    yes; it is the public way to declare a periodic task.
CREATE OR REPLACE FUNCTION taskforge.tf_schedule_periodic(
    name text,
    cron text,
    task_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority numeric DEFAULT 0,
    max_attempts numeric DEFAULT 3,
    timezone text DEFAULT 'UTC')
RETURNS TABLE(next_fire_at timestamptz, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_next timestamptz;
    v_created boolean;
BEGIN
    PERFORM taskforge._tf_check_name('name', tf_schedule_periodic.name, 'schedule');
    PERFORM taskforge._tf_cron_parse(tf_schedule_periodic.cron);
    PERFORM taskforge._tf_submit_one(tf_schedule_periodic.task_type, tf_schedule_periodic.payload,
        tf_schedule_periodic.queue, tf_schedule_periodic.priority, tf_schedule_periodic.max_attempts,
        NULL, NULL, v_now, '', validate_only => true);
    IF tf_schedule_periodic.timezone IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = tf_schedule_periodic.timezone) THEN
        PERFORM taskforge._tf_invalid('timezone', format('must be a time zone name of pg_timezone_names, such as '
            || '''UTC'' or ''Europe/Berlin'', got %s', coalesce(quote_literal(left(tf_schedule_periodic.timezone, 100)), 'NULL')));
    END IF;

    v_next := taskforge._tf_cron_next(tf_schedule_periodic.cron, v_now, tf_schedule_periodic.timezone);
    INSERT INTO taskforge.periodic_schedules AS s
           (name, cron, task_type, payload, queue, priority, max_attempts, timezone, next_fire_at,
            created_at, updated_at)
    VALUES (tf_schedule_periodic.name, tf_schedule_periodic.cron, tf_schedule_periodic.task_type,
            tf_schedule_periodic.payload, tf_schedule_periodic.queue, tf_schedule_periodic.priority,
            tf_schedule_periodic.max_attempts, tf_schedule_periodic.timezone, v_next, v_now, v_now)
    ON CONFLICT (name) DO UPDATE
       SET cron = EXCLUDED.cron, task_type = EXCLUDED.task_type, payload = EXCLUDED.payload,
           queue = EXCLUDED.queue, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
           timezone = EXCLUDED.timezone,
           -- Same cron and zone: keep the tick that is next (it may be due and not yet enqueued).
           next_fire_at = CASE WHEN s.cron = EXCLUDED.cron AND s.timezone = EXCLUDED.timezone
                               THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END,
           updated_at = EXCLUDED.updated_at
    RETURNING s.next_fire_at, s.created_at = v_now INTO v_next, v_created;

    RETURN QUERY SELECT v_next, v_created;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_schedule_periodic(text, text, text, jsonb, text, numeric, numeric, text) IS
    'Create or replace a periodic schedule: a 5-field cron in a time zone and the task tf_enqueue_periodic submits at each tick. Same cron and zone keep the next tick. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_schedule_periodic(
    text, text, text, jsonb, text, numeric, numeric, text
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_schedule_periodic(text, text, text, jsonb, text, numeric, numeric, text)
    TO taskforge_client;

-- >>> db/functions/tf_scheduler_heartbeat.sql
-- taskforge.tf_scheduler_heartbeat(scheduler_id uuid, name text, hostname text DEFAULT NULL,
--     pid numeric DEFAULT NULL, heartbeat_seconds double precision DEFAULT 5,
--     stopping boolean DEFAULT false) -> timestamptz
--
-- Purpose:    report that a scheduler process is alive (the durable signal behind tf_schedulers
--             and `taskforge healthcheck`). The first call for a scheduler_id records the process
--             start; later calls move last_heartbeat_at. heartbeat_seconds is how often the
--             process promises to call: tf_schedulers reports it "stale" after three missed
--             beats. The last call of a clean stop passes stopping => true ("stopped").
-- Parameters: scheduler_id  chosen by the process at start (a fresh uuid per process start).
--             name 1..200 characters; hostname at most 255 characters; pid a whole number
--             1..2147483647 (declared numeric, so any number a caller writes gets TF400;
--             hostname and pid NULL = unknown). name, hostname, pid and heartbeat_seconds are recorded from
--             the latest call. heartbeat_seconds 0 < s <= 3600. stopping not NULL.
-- Returns:    the database time recorded as last_heartbeat_at.
-- Errors:     TF400 naming the argument; TF409 scheduler_id already stopped (a new process start
--             needs a new id). Nothing is written on an error.
-- Locks:      the schedulers row (INSERT ... ON CONFLICT DO UPDATE).
-- Clock:      clock_timestamp().
-- By hand:    yes, though it makes a dead scheduler look alive until its next missed beats.
CREATE OR REPLACE FUNCTION taskforge.tf_scheduler_heartbeat(
    scheduler_id uuid,
    name text,
    hostname text DEFAULT NULL,
    pid numeric DEFAULT NULL,
    heartbeat_seconds double precision DEFAULT 5,
    stopping boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_at timestamptz;
BEGIN
    IF tf_scheduler_heartbeat.scheduler_id IS NULL THEN
        PERFORM taskforge._tf_invalid('scheduler_id', 'must not be NULL');
    END IF;
    IF tf_scheduler_heartbeat.name IS NULL OR length(tf_scheduler_heartbeat.name) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid('name', 'must be 1 to 200 characters');
    END IF;
    IF length(tf_scheduler_heartbeat.hostname) > 255 THEN
        PERFORM taskforge._tf_invalid('hostname', format('must be at most 255 characters, got %s',
            length(tf_scheduler_heartbeat.hostname)));
    END IF;
    IF tf_scheduler_heartbeat.pid IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('pid', tf_scheduler_heartbeat.pid, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_seconds('heartbeat_seconds', tf_scheduler_heartbeat.heartbeat_seconds, 0, 3600, true);
    IF tf_scheduler_heartbeat.stopping IS NULL THEN
        PERFORM taskforge._tf_invalid('stopping', 'must not be NULL');
    END IF;

    INSERT INTO taskforge.schedulers AS s
           (scheduler_id, name, hostname, pid, heartbeat_seconds, started_at, last_heartbeat_at, stopped_at)
    VALUES (tf_scheduler_heartbeat.scheduler_id, tf_scheduler_heartbeat.name, tf_scheduler_heartbeat.hostname,
            tf_scheduler_heartbeat.pid, tf_scheduler_heartbeat.heartbeat_seconds, v_now, v_now,
            CASE WHEN tf_scheduler_heartbeat.stopping THEN v_now END)
    ON CONFLICT (scheduler_id) DO UPDATE
       SET name = excluded.name,
           hostname = excluded.hostname,
           pid = excluded.pid,
           heartbeat_seconds = excluded.heartbeat_seconds,
           last_heartbeat_at = greatest(v_now, s.started_at),
           stopped_at = CASE WHEN tf_scheduler_heartbeat.stopping THEN greatest(v_now, s.started_at) END
     WHERE s.stopped_at IS NULL
    RETURNING s.last_heartbeat_at INTO v_at;
    IF v_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('scheduler_id: scheduler %s has stopped; a new process start needs a new id',
                tf_scheduler_heartbeat.scheduler_id),
            COLUMN = 'scheduler_id';
    END IF;
    RETURN v_at;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_scheduler_heartbeat(uuid, text, text, numeric, double precision, boolean) IS
    'Scheduler liveness beat (upsert per process start; stopping => true on a clean stop); returns database time. Errors: TF400, TF409 (scheduler already stopped).';
REVOKE ALL ON FUNCTION taskforge.tf_scheduler_heartbeat(
    uuid, text, text, numeric, double precision, boolean
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_scheduler_heartbeat(
    uuid, text, text, numeric, double precision, boolean
) TO taskforge_scheduler;

-- >>> db/functions/tf_schema_version.sql
-- taskforge.tf_schema_version() -> int
--
-- Purpose:    the version of the SQL API installed in this database. Workers read it at start
--             and refuse to run against a version newer than they know. It changes whenever a
--             migration changes a public signature or a behaviour clients depend on.
-- Returns:    int (1 for the first release).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: yes.
CREATE OR REPLACE FUNCTION taskforge.tf_schema_version()
RETURNS int
LANGUAGE plpgsql
STABLE  -- not IMMUTABLE: a migration changes the answer, so no plan may fold it
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN 1;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_schema_version() IS
    'Version of the installed TaskForge SQL API (int). Workers refuse to start against an unknown newer version.';
REVOKE ALL ON FUNCTION taskforge.tf_schema_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_schema_version()
    TO taskforge_worker, taskforge_scheduler, taskforge_client;

-- >>> db/functions/tf_set_concurrency_limit.sql
-- taskforge.tf_set_concurrency_limit(concurrency_key text, max_running numeric) -> int
--
-- Purpose:    set or clear the limit of a concurrency key (tf_submit's concurrency_key): at no
--             instant are more than max_running of the key's tasks RUNNING, however many
--             claimers run. Claims of a key are serialised on its taskforge.concurrency_keys row
--             (a claimer that finds it locked skips the key for that claim, it never waits), and
--             count the key's RUNNING tasks under that lock, as for a queue limit
--             (tf_set_queue_limit). Lowering a limit below the RUNNING count stops nothing: the
--             key gets no new claims until it is under the limit again. Every concurrency key
--             takes part in fair claiming whether it has a limit or not (docs/flow-control.md).
-- Parameters: concurrency_key  1..200 characters (it need not have tasks yet).
--             max_running      whole number 1..1000000, or NULL to remove the limit.
-- Returns:    the previous limit (NULL = it was unlimited).
-- Errors:     TF400 naming the argument. Nothing written on error.
-- Locks:      the key's taskforge.concurrency_keys row (created if missing) FOR UPDATE.
-- Notify:     pg_notify('taskforge', queue) for each queue with QUEUED tasks of the key when the
--             limit is raised or removed.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_concurrency_limit(concurrency_key text, max_running numeric)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_old int;
    v_queues text[];
BEGIN
    PERFORM taskforge._tf_check_flow_key('concurrency_key', tf_set_concurrency_limit.concurrency_key, nullable => false);
    IF tf_set_concurrency_limit.max_running IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('max_running', tf_set_concurrency_limit.max_running, 1, 1000000);
    END IF;
    INSERT INTO taskforge.concurrency_keys AS k (concurrency_key, created_at, updated_at)
    VALUES (tf_set_concurrency_limit.concurrency_key, v_now, v_now)
    ON CONFLICT (concurrency_key) DO NOTHING;
    SELECT k.max_running INTO v_old FROM taskforge.concurrency_keys k
     WHERE k.concurrency_key = tf_set_concurrency_limit.concurrency_key FOR UPDATE;
    UPDATE taskforge.concurrency_keys k
       SET max_running = tf_set_concurrency_limit.max_running, updated_at = v_now
     WHERE k.concurrency_key = tf_set_concurrency_limit.concurrency_key;
    IF v_old IS NOT NULL AND (tf_set_concurrency_limit.max_running IS NULL OR tf_set_concurrency_limit.max_running > v_old) THEN
        SELECT array_agg(DISTINCT t.queue) INTO v_queues FROM taskforge.tasks t
         WHERE t.state = 'QUEUED' AND t.concurrency_key = tf_set_concurrency_limit.concurrency_key;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    END IF;
    RETURN v_old;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) IS
    'Set (1..1000000) or clear (NULL) the maximum number of RUNNING tasks of a concurrency key; returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) TO taskforge_client;

-- >>> db/functions/tf_set_queue_aging.sql
-- taskforge.tf_set_queue_aging(queue text, priority_per_second double precision)
--   -> double precision
--
-- Purpose:    set or clear a queue's priority aging (docs/flow-control.md, "Priority aging"):
--             a waiting task's effective priority is
--               priority + priority_per_second * (seconds since it was submitted)
--             in database time, and claims take the queue's due tasks by effective priority
--             (DESC), then created_at, task_id. Since every task of the queue ages at the same
--             rate, this is the order of created_at - priority / priority_per_second: a task
--             of priority p is claimed before every task of priority P > p submitted more than
--             (P - p) / priority_per_second seconds after it, so a sustained stream of higher
--             priorities delays it by at most that long plus the time to run what was
--             submitted before that instant. Off (NULL, the default) the order is
--             priority DESC, created_at, task_id. Across queues, claims that take from several
--             compare effective priorities (an unaged task's is its priority). Tasks with flow
--             keys (rate, concurrency, ordering) keep their keyed order within the keyed pick.
-- Parameters: queue                a queue name (it need not have tasks yet).
--             priority_per_second  0 < r <= 65535 priority points per second of waiting, or
--                                  NULL to turn aging off.
-- Returns:    the previous rate (NULL = it was off).
-- Errors:     TF400 queue NULL or malformed, priority_per_second out of range. Nothing written
--             on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_queue_aging(queue text, priority_per_second double precision)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_row taskforge.queues%ROWTYPE;
BEGIN
    IF tf_set_queue_aging.priority_per_second IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('priority_per_second', tf_set_queue_aging.priority_per_second, 0, 65535, true, 'priority points per second');
    END IF;
    v_row := taskforge._tf_lock_queue(tf_set_queue_aging.queue);
    UPDATE taskforge.queues q
       SET aging_per_second = tf_set_queue_aging.priority_per_second, updated_at = v_now
     WHERE q.queue = v_row.queue;
    RETURN v_row.aging_per_second;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) IS
    'Set (0 < r <= 65535 priority points per second of waiting) or clear (NULL) a queue''s priority aging; returns the previous rate. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) TO taskforge_client;

-- >>> db/functions/tf_set_queue_limit.sql
-- taskforge.tf_set_queue_limit(queue text, max_running numeric) -> int
--
-- Purpose:    set or clear a queue's concurrency limit: at no instant are more than max_running
--             of the queue's tasks RUNNING, however many workers and claimers there are. Claims
--             of a limited queue are serialised on its taskforge.queues row (a claimer that finds
--             it locked skips the queue for that claim, it never waits); unlimited queues are not
--             affected. Lowering a limit below the current RUNNING count stops nothing: the
--             queue gets no new claims until it is under the limit again.
-- Parameters: queue        a queue name (it need not have tasks yet).
--             max_running  whole number 1..1000000, or NULL to remove the limit.
-- Returns:    the previous limit (NULL = it was unlimited).
-- Errors:     TF400 queue NULL or malformed, max_running out of range. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_queue_limit(queue text, max_running numeric)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_row taskforge.queues%ROWTYPE;
BEGIN
    IF tf_set_queue_limit.max_running NOT BETWEEN 1 AND 1000000
       OR tf_set_queue_limit.max_running <> trunc(tf_set_queue_limit.max_running) THEN
        PERFORM taskforge._tf_check_int('max_running', tf_set_queue_limit.max_running, 1, 1000000);
    END IF;
    v_row := taskforge._tf_lock_queue(tf_set_queue_limit.queue);
    UPDATE taskforge.queues q
       SET max_running = tf_set_queue_limit.max_running, updated_at = v_now
     WHERE q.queue = v_row.queue;
    IF v_row.max_running IS NOT NULL
       AND (tf_set_queue_limit.max_running IS NULL OR tf_set_queue_limit.max_running > v_row.max_running) THEN
        -- More room than before: wake idle workers of the queue.
        PERFORM taskforge._tf_notify_queues(ARRAY[v_row.queue]);
    END IF;
    RETURN v_row.max_running;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) IS
    'Set (1..1000000) or clear (NULL) the maximum number of RUNNING tasks of a queue; returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) TO taskforge_client;

-- >>> db/functions/tf_set_rate_limit.sql
-- taskforge.tf_set_rate_limit(rate_key text, per_second double precision, burst numeric DEFAULT NULL)
--   -> TABLE(previous_per_second double precision, previous_burst int)
--
-- Purpose:    set or clear the rate limit of a rate key (tf_submit's rate_key): a token bucket
--             holding at most burst tokens, refilled at per_second tokens per second of database
--             time. Each task of the key that a claim starts takes one token, in the claim's own
--             transaction and under the bucket's row lock, so in any window of T seconds (the
--             attempts' started_at) at most burst + per_second * T of the key's tasks start,
--             however many claimers run (docs/flow-control.md). A task with no token waits
--             QUEUED; nothing is refused at submit. A new bucket starts full; changing a
--             limit keeps the tokens the bucket holds now (at most the new burst).
-- Parameters: rate_key    1..200 characters.
--             per_second  finite, 0 < r <= 1000000 tokens per second, or NULL to remove the
--                         limit (the key's tasks then start without tokens).
--             burst       whole number 1..1000000, or NULL for max(1, ceil(per_second)).
-- Returns:    one row: the limit before the call (NULLs when there was none).
-- Errors:     TF400 naming the argument. Nothing written on error.
-- Locks:      the key's taskforge.rate_limits row (FOR UPDATE when it exists).
-- Notify:     pg_notify('taskforge', queue) for each queue with QUEUED tasks of the key when the
--             limit is raised or removed, so idle workers look again.
-- Clock:      clock_timestamp() at entry: the bucket's refill time.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_rate_limit(
    rate_key text,
    per_second double precision,
    burst numeric DEFAULT NULL)
RETURNS TABLE(previous_per_second double precision, previous_burst int)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_old taskforge.rate_limits%ROWTYPE;
    v_burst int;
    v_tokens double precision;
    v_queues text[];
BEGIN
    PERFORM taskforge._tf_check_flow_key('rate_key', tf_set_rate_limit.rate_key, nullable => false);
    IF tf_set_rate_limit.per_second IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('per_second', tf_set_rate_limit.per_second, 0, 1000000, true, 'tokens per second');
    END IF;
    IF tf_set_rate_limit.burst IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('burst', tf_set_rate_limit.burst, 1, 1000000);
        IF tf_set_rate_limit.per_second IS NULL THEN
            PERFORM taskforge._tf_invalid('burst', 'must be NULL when per_second is NULL (the limit is removed)');
        END IF;
    END IF;
    SELECT * INTO v_old FROM taskforge.rate_limits r WHERE r.rate_key = tf_set_rate_limit.rate_key FOR UPDATE;
    IF tf_set_rate_limit.per_second IS NULL THEN
        DELETE FROM taskforge.rate_limits r WHERE r.rate_key = tf_set_rate_limit.rate_key;
    ELSE
        v_burst := coalesce(tf_set_rate_limit.burst::int, greatest(1, ceil(tf_set_rate_limit.per_second)::int));
        v_tokens := CASE WHEN v_old.rate_key IS NULL THEN v_burst
                         ELSE least(v_burst, v_old.tokens + v_old.per_second
                                    * greatest(0, extract(epoch FROM v_now - v_old.refilled_at)::double precision)) END;
        INSERT INTO taskforge.rate_limits AS r (rate_key, per_second, burst, tokens, refilled_at, created_at, updated_at)
        VALUES (tf_set_rate_limit.rate_key, tf_set_rate_limit.per_second, v_burst, v_tokens,
                greatest(v_now, v_old.refilled_at), v_now, v_now)
        ON CONFLICT (rate_key) DO UPDATE
           SET per_second = excluded.per_second, burst = excluded.burst, tokens = excluded.tokens,
               refilled_at = excluded.refilled_at, updated_at = excluded.updated_at;
    END IF;
    IF v_old.rate_key IS NOT NULL AND (tf_set_rate_limit.per_second IS NULL OR tf_set_rate_limit.per_second > v_old.per_second
                                       OR v_burst > v_old.burst) THEN
        SELECT array_agg(DISTINCT t.queue) INTO v_queues FROM taskforge.tasks t
         WHERE t.state = 'QUEUED' AND t.keyed AND t.rate_key = tf_set_rate_limit.rate_key;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    END IF;
    RETURN QUERY SELECT v_old.per_second, v_old.burst;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) IS
    'Set (per_second > 0, burst 1..1000000, default ceil(per_second)) or remove (NULL) the token-bucket rate limit of a rate key: at most burst + per_second * T starts in any T seconds. Returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) TO taskforge_client;

-- >>> db/functions/tf_submit.sql
-- taskforge.tf_submit(task_type text, payload jsonb DEFAULT '{}', queue text DEFAULT 'default',
--     priority numeric DEFAULT 0, max_attempts numeric DEFAULT 3, scheduled_at timestamptz DEFAULT NULL,
--     idempotency_key text DEFAULT NULL, timeout_seconds double precision DEFAULT NULL,
--     delay_seconds double precision DEFAULT NULL, notify_finished boolean DEFAULT false,
--     traceparent text DEFAULT NULL, depends_on bigint[] DEFAULT NULL, rate_key text DEFAULT NULL,
--     concurrency_key text DEFAULT NULL, ordering_key text DEFAULT NULL)
--   -> TABLE(task_id bigint, state text, created boolean)
--
-- Purpose:    admit one task. A committed task starts QUEUED with no attempts and becomes
--             eligible once scheduled_at (NULL = now, or now + delay_seconds) has passed; with
--             depends_on it starts BLOCKED until its parents SUCCEEDED (below).
-- Parameters: task_type        a registered type (tf_register_task_type).
--             payload          a JSON object, at most 1 MiB as JSON text and nested at most
--                              100 levels deep (objects and arrays; the payload object is level
--                              1, so {"a": [1]} is 2 deep). Deeper documents are refused because
--                              clients decode payloads recursively (Python's json stops near
--                              1000 levels). The argument is parsed as jsonb before the function
--                              runs: malformed JSON is 22P02, text with a NUL (\u0000) is 22P05,
--                              and a document nested beyond what max_stack_depth allows (some
--                              10,000 levels with the default 2 MB) is 54001; no body can
--                              turn those into TF400.
--             queue            ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
--             priority         whole number -32768..32767; higher is claimed first.
--             max_attempts     whole number 1..1000; total budget (first run, retries, crash
--                              replacements). Both are numeric, not int, so that any number
--                              reaches the check (3000000000 is TF400, not 42883 "function does
--                              not exist"); every call shape of the int version still resolves.
--             scheduled_at     earliest eligibility, finite timestamptz, or NULL for now (or
--                              for now + delay_seconds).
--             idempotency_key  1..200 characters, or NULL.
--             timeout_seconds  (appended later) this task's attempt timeout, 0 < s <= 604800
--                              (7 days), overriding its type's (tf_register_task_type); NULL:
--                              the type's, as it is at submit. Each attempt's deadline is its
--                              claim time + this (see tf_claim, tf_renew).
--             The last three were appended together (every earlier call shape, positional or
--             named, still resolves):
--             delay_seconds    earliest eligibility as a delay from now: finite, 0 <= s <=
--                              3155760000 (100 years of 365.25 days), or NULL for none.
--                              scheduled_at becomes clock_timestamp() + delay at entry (the
--                              database's clock, never the caller's). Give at most one of
--                              scheduled_at and delay_seconds: both is TF400 delay_seconds.
--             notify_finished  true: when the task reaches SUCCEEDED, FAILED or CANCELLED, by
--                              any path (finalize, recovery of an expired lease or a passed
--                              deadline, cancel), that transaction sends
--                              pg_notify('taskforge_finished', task_id::text), delivered on
--                              commit (the trigger function taskforge._tf_notify_finished).
--                              false (the default): nothing is sent. NULL is TF400. Such a
--                              notification serialises the committing transaction with other
--                              NOTIFYing commits, so only tasks someone waits for should ask.
--             traceparent      the W3C trace context of the submitter, NULL or
--                              ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$ with the version
--                              not 'ff' and neither id all zeros (taskforge._tf_traceparent_ok);
--                              stored and returned as the last column of every claim of the
--                              task (tf_claim, tf_finalize_and_claim), so a worker can link its
--                              attempt's span to it.
--             The last four were appended together (issue 18; docs/workflows.md and
--             docs/flow-control.md):
--             depends_on       parent task ids: NULL or empty for none, else at most 1000
--                              existing tasks (duplicates count once; a NULL element is TF400,
--                              a missing task TF404 COLUMN 'depends_on'). The task starts
--                              BLOCKED while a parent is not SUCCEEDED and becomes QUEUED in the
--                              transaction of its last parent's success; when a parent ends
--                              FAILED or CANCELLED (or already has), it ends CANCELLED with
--                              cancel_reason 'dependency_failed' and no attempt, and so do its
--                              own BLOCKED descendants. Only existing tasks can be parents, so
--                              no cycle can be formed.
--             rate_key         a key of 1..200 characters or NULL: the task starts only with a
--                              token of its key's bucket (tf_set_rate_limit; a key without one
--                              is unlimited).
--             concurrency_key  1..200 characters or NULL: at most the key's max_running
--                              (tf_set_concurrency_limit; none: unlimited) of its tasks RUNNING
--                              at once, and claims rotate across keys (fair claiming).
--             ordering_key     1..200 characters or NULL: the key's tasks run one at a time in
--                              task id order (the order their submits commit in: each submit
--                              locks the key's row); the next starts once the previous is
--                              terminal, and the whole key waits while one is RETRYING.
-- Idempotency: the key is reserved by a partial unique index for as long as the task row
--             exists. The request fingerprint (taskforge._tf_fingerprint) covers task_type,
--             payload, queue, priority, max_attempts and scheduled_at (UTC; NULL stays NULL),
--             timeout_seconds when one is given, depends_on and the three keys when given,
--             and delay_seconds when one is given, as given
--             (not the instant it yields): replaying a delayed submit, later, with the same key
--             returns the stored task (created = false, its scheduled_at from the first call)
--             instead of TF409. notify_finished and traceparent are not part of it: a replay
--             that differs only in them returns the stored task, and the first submit's values
--             stand.
--             Same key, same fingerprint: the stored task is returned with created = false,
--             whatever its state now; nothing is created or reset. Same key, different
--             fingerprint: TF409. Concurrent submits with one key wait on the first inserter
--             (INSERT ... ON CONFLICT DO NOTHING) and all get its id; if that transaction rolls
--             back the key is free and the next submitter creates the task.
-- Returns:    one row: the task id, its current state, and whether this call created it.
-- Errors:     TF400 naming the argument (nothing written): MESSAGE '<argument>: <problem>',
--             COLUMN '<argument>'; TF409 key reused with a different request, COLUMN
--             'idempotency_key' (docs/sql-api.md#errors). Under REPEATABLE READ or SERIALIZABLE a concurrent submit with the same
--             key can raise 40001 (serialization_failure): retry the transaction.
-- Locks:      inserts one tasks row (with a key, one taskforge.idempotency_keys row first); on a
--             key conflict waits for the competing inserter; the
--             parents' rows (depends_on) and the ordering key's row until commit.
-- Notify:     pg_notify('taskforge', queue) when the task is due now (delivered on commit);
--             with notify_finished, later, pg_notify('taskforge_finished', task_id) when it ends.
-- Clock:      clock_timestamp() once at entry: created_at, the default schedule and the base of
--             delay_seconds.
-- By hand:    yes; it is the public way to create work.
-- Shares:     its per-request core with tf_submit_many (taskforge._tf_submit_one).
CREATE OR REPLACE FUNCTION taskforge.tf_submit(
    task_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority numeric DEFAULT 0,
    max_attempts numeric DEFAULT 3,
    scheduled_at timestamptz DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    timeout_seconds double precision DEFAULT NULL,
    delay_seconds double precision DEFAULT NULL,
    notify_finished boolean DEFAULT false,
    traceparent text DEFAULT NULL,
    depends_on bigint[] DEFAULT NULL,
    rate_key text DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    ordering_key text DEFAULT NULL)
RETURNS TABLE(task_id bigint, state text, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz := clock_timestamp();
    r record;
BEGIN
    -- Validation, key reservation, fingerprint, replay and TF409: the shared per-request core.
    SELECT * INTO r
      FROM taskforge._tf_submit_one(tf_submit.task_type, tf_submit.payload, tf_submit.queue, tf_submit.priority,
                                    tf_submit.max_attempts, tf_submit.scheduled_at, tf_submit.idempotency_key,
                                    v_now, '', timeout_seconds => tf_submit.timeout_seconds,
                                    delay_seconds => tf_submit.delay_seconds,
                                    notify_finished => tf_submit.notify_finished,
                                    traceparent => tf_submit.traceparent, depends_on => tf_submit.depends_on,
                                    rate_key => tf_submit.rate_key, concurrency_key => tf_submit.concurrency_key,
                                    ordering_key => tf_submit.ordering_key);
    IF r.due_now THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[tf_submit.queue]);
    END IF;
    RETURN QUERY SELECT r.task_id, r.state, r.created;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_submit(text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text, bigint[], text, text, text) IS
    'Admit a task (QUEUED, no attempts), due at scheduled_at or after delay_seconds (database clock). Idempotency key + SHA-256 request fingerprint (the delay as given; not notify_finished or traceparent): replay returns the stored task with created=false; a different request is TF409. NOTIFY taskforge(queue) when due now; with notify_finished, NOTIFY taskforge_finished(task_id) when it ends. traceparent is returned by its claims. depends_on: BLOCKED until every parent SUCCEEDED (CANCELLED dependency_failed if one fails); rate_key, concurrency_key, ordering_key: flow control. Errors: TF400, TF404 (depends_on), TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_submit(
    text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text,
    bigint[], text, text, text
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_submit(
    text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text,
    bigint[], text, text, text
) TO taskforge_client;

-- >>> db/functions/tf_submit_many.sql
-- taskforge.tf_submit_many(requests jsonb)
--   -> TABLE(task_id bigint, state text, created boolean)
--
-- Purpose:    the batch form of tf_submit: admit 1..10000 tasks in one call and one commit.
--             Each element obeys exactly tf_submit's rules (validation, idempotency key,
--             fingerprint, replay, TF409): both run the same per-request core,
--             taskforge._tf_submit_one.
-- Parameters: requests  a JSON array of 1..10000 request objects. Each object has the keys of
--             tf_submit's parameters; an omitted key takes tf_submit's default, JSON null is
--             SQL NULL (so "priority": null is TF400, as in tf_submit), any other key is TF400:
--               task_type        string (required).
--               payload          a JSON object, at most 1 MiB as JSON text and 100 levels deep
--                                (as tf_submit); default {}.
--               queue            string; default 'default'.
--               priority         a JSON number, checked as tf_submit's (whole, -32768..32767);
--                                default 0.
--               max_attempts     a JSON number, checked as tf_submit's (whole, 1..1000); default 3.
--               scheduled_at     an ISO 8601 timestamp string with a UTC offset
--                                ('2031-03-04T05:06:07Z', '...+02:00'), or null for now.
--                                A string without an offset is refused: it would be read in
--                                the session's TimeZone.
--               idempotency_key  string or null.
--               timeout_seconds  a JSON number (seconds, 0 < s <= 604800) or null for the task
--                                type's timeout.
--               delay_seconds    a JSON number (seconds, 0 <= s <= 3155760000) or null for
--                                none: scheduled at the call's clock_timestamp() + delay. An
--                                element giving both a scheduled_at string and a delay is TF400
--                                'requests[i].delay_seconds'. In the fingerprint as given.
--               notify_finished  a JSON boolean; default false (null is TF400, as NULL in
--                                tf_submit). Not in the fingerprint.
--               traceparent      a W3C traceparent string (tf_submit's rule) or null. Not in
--                                the fingerprint.
--               depends_on       a JSON array of parent task ids (whole JSON numbers) or null.
--               depends_on_positions
--                                a JSON array of 0-based positions of EARLIER elements of this
--                                call (a position >= the element's own is TF400), or null: their
--                                tasks are parents too, so a whole graph is submitted in one call
--                                and one transaction. Both lists together obey tf_submit's
--                                depends_on rules (at most 1000, the fingerprint covers the
--                                resolved ids: a replayed graph resolves to the same ids).
--               rate_key, concurrency_key, ordering_key
--                                strings or null (tf_submit's rules).
--             Why one jsonb array and not parallel arrays: a request keeps its keys together
--             (no eleven arrays to keep aligned), an element can omit a key and get tf_submit's
--             default, the JSON-lines file of `taskforge submit --from-file` maps one to one,
--             and every client language can build it.
-- Returns:    one row per element, in input order: the task id, its current state, and
--             whether this call created it. An element repeating an earlier element's
--             idempotency key (same request) resolves to that same task with created = false.
-- Errors:     TF400 naming the element (0-based, as in the JSON array) and argument, e.g.
--             'requests[3].priority: must be between -32768 and 32767, got 40000', or
--             'requests[3]: ...' for the element's shape, 'requests: ...' for the array itself;
--             TF409 'requests[3].idempotency_key: ...' for a key reused with a different request
--             (also by an earlier element of the same call). The COLUMN field of each error is
--             the text before the colon ('requests[3].priority'), so a client reads the element
--             and key from the error's fields, not its message. Nothing is written when an error is raised. Under REPEATABLE READ or
--             SERIALIZABLE a concurrent submit with the same key can raise 40001: retry.
-- Locks:      inserts one tasks row per created element; on a key conflict waits for the
--             competing inserter. Two batches sharing keys in opposite orders can deadlock
--             (40P01, one is rolled back): retry, or sort keyed requests by key.
-- Notify:     pg_notify('taskforge', queue) once per distinct queue that received a task due
--             now (delivered on commit); later, as tf_submit, taskforge_finished for the tasks
--             of elements with notify_finished.
-- Clock:      clock_timestamp() once per call: created_at, the default schedule and the base of
--             delay_seconds of every element.
-- By hand:    yes; the public way to create much work at once.
CREATE OR REPLACE FUNCTION taskforge.tf_submit_many(requests jsonb)
RETURNS TABLE(task_id bigint, state text, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c_max_requests constant int := 10000;
    c_keys constant text[] := ARRAY['task_type', 'payload', 'queue', 'priority', 'max_attempts', 'scheduled_at',
                                    'idempotency_key', 'timeout_seconds', 'delay_seconds', 'notify_finished',
                                    'traceparent', 'depends_on', 'depends_on_positions', 'rate_key',
                                    'concurrency_key', 'ordering_key'];
    v_now timestamptz := clock_timestamp();
    v_count int;
    v_request jsonb;
    v_index int;
    v_prefix text;
    v_key text;
    v_value jsonb;
    v_nums numeric[];
    v_timeout double precision;
    v_delay double precision;
    v_timeout_or_delay double precision;
    v_notify boolean;
    v_scheduled_at timestamptz;
    v_queue text;
    v_due_queues text[] := '{}';
    v_ids bigint[] := '{}';
    v_parents bigint[];
    v_list text;
    v_elem jsonb;
    v_pos int;
    r record;
BEGIN
    IF tf_submit_many.requests IS NULL OR jsonb_typeof(tf_submit_many.requests) <> 'array' THEN
        PERFORM taskforge._tf_invalid('requests', format('must be a JSON array of request objects, got %s',
            coalesce(jsonb_typeof(tf_submit_many.requests), 'NULL')));
    END IF;
    v_count := jsonb_array_length(tf_submit_many.requests);
    IF v_count NOT BETWEEN 1 AND c_max_requests THEN
        PERFORM taskforge._tf_invalid('requests', format('must have 1 to %s elements, got %s', c_max_requests, v_count));
    END IF;

    FOR v_index IN 0 .. v_count - 1 LOOP
        v_request := tf_submit_many.requests -> v_index;
        v_prefix := 'requests[' || v_index || '].';
        -- The shape of the element; the values are checked by the shared core.
        IF jsonb_typeof(v_request) <> 'object' THEN
            PERFORM taskforge._tf_invalid(format('requests[%s]', v_index),
                format('must be a JSON object, got %s', jsonb_typeof(v_request)));
        END IF;
        IF v_request - c_keys <> '{}'::jsonb THEN
            SELECT k INTO v_key FROM jsonb_object_keys(v_request - c_keys) AS k LIMIT 1;
            PERFORM taskforge._tf_invalid(format('requests[%s]', v_index), format('unknown key %s (known: %s)',
                quote_literal(left(v_key, 100)), array_to_string(c_keys, ', ')));
        END IF;
        IF jsonb_typeof(v_request -> 'task_type') <> 'string' OR jsonb_typeof(v_request -> 'queue') <> 'string'
           OR jsonb_typeof(v_request -> 'idempotency_key') <> 'string'
           OR jsonb_typeof(v_request -> 'scheduled_at') <> 'string'
           OR jsonb_typeof(v_request -> 'traceparent') <> 'string' OR jsonb_typeof(v_request -> 'rate_key') <> 'string'
           OR jsonb_typeof(v_request -> 'concurrency_key') <> 'string'
           OR jsonb_typeof(v_request -> 'ordering_key') <> 'string' THEN
            FOREACH v_key IN ARRAY ARRAY['task_type', 'queue', 'idempotency_key', 'scheduled_at', 'traceparent',
                                         'rate_key', 'concurrency_key', 'ordering_key'] LOOP
                IF jsonb_typeof(v_request -> v_key) NOT IN ('string', 'null') THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_key, format('must be a JSON string or null, got %s',
                        jsonb_typeof(v_request -> v_key)));
                END IF;
            END LOOP;
        END IF;
        v_nums := ARRAY[0, 3];  -- tf_submit's defaults for priority and max_attempts
        v_timeout := NULL;      -- and for timeout_seconds (the task type's)
        v_delay := NULL;        -- and for delay_seconds (none)
        IF v_request ? 'priority' OR v_request ? 'max_attempts' OR v_request ? 'timeout_seconds'
           OR v_request ? 'delay_seconds' THEN
            FOREACH v_key IN ARRAY ARRAY['priority', 'max_attempts', 'timeout_seconds', 'delay_seconds'] LOOP
                v_value := v_request -> v_key;
                IF v_value IS NULL OR jsonb_typeof(v_value) = 'null' THEN
                    -- omitted: the default; JSON null: SQL NULL (tf_submit refuses it for the
                    -- whole numbers; for timeout_seconds it means the type's, for delay_seconds none)
                    IF v_value IS NOT NULL AND v_key IN ('priority', 'max_attempts') THEN
                        v_nums[array_position(ARRAY['priority', 'max_attempts'], v_key)] := NULL;
                    END IF;
                ELSIF jsonb_typeof(v_value) <> 'number' THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_key, format('must be a JSON number, got %s',
                        left(v_value::text, 100)));
                ELSIF v_key IN ('timeout_seconds', 'delay_seconds') THEN
                    -- A JSON number beyond double precision becomes +/-Infinity: out of range below.
                    v_timeout_or_delay := CASE WHEN abs(v_value::numeric) > 1e300
                                               THEN sign(v_value::numeric)::float8 * 'Infinity'::float8
                                               ELSE v_value::numeric::float8 END;
                    IF v_key = 'timeout_seconds' THEN
                        v_timeout := v_timeout_or_delay;
                    ELSE
                        v_delay := v_timeout_or_delay;
                    END IF;
                ELSE
                    -- The range and whole-number checks are tf_submit's (taskforge._tf_submit_one).
                    v_nums[array_position(ARRAY['priority', 'max_attempts'], v_key)] := v_value::numeric;
                END IF;
            END LOOP;
        END IF;
        v_scheduled_at := NULL;
        IF jsonb_typeof(v_request -> 'scheduled_at') = 'string' THEN
            IF v_request ->> 'scheduled_at' !~* '^[0-9].*[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|[+-][0-9]{2}(:?[0-9]{2})?)$' THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'scheduled_at',
                    format('must be an ISO 8601 timestamp with a UTC offset (e.g. 2031-03-04T05:06:07Z), got %s',
                        quote_literal(left(v_request ->> 'scheduled_at', 100))));
            END IF;
            BEGIN
                v_scheduled_at := (v_request ->> 'scheduled_at')::timestamptz;
            EXCEPTION WHEN data_exception THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'scheduled_at',
                    format('must be an ISO 8601 timestamp with a UTC offset (e.g. 2031-03-04T05:06:07Z), got %s',
                        quote_literal(left(v_request ->> 'scheduled_at', 100))));
            END;
        END IF;

        v_notify := false;  -- tf_submit's default
        IF v_request ? 'notify_finished' THEN
            v_value := v_request -> 'notify_finished';
            IF jsonb_typeof(v_value) NOT IN ('boolean', 'null') THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'notify_finished', format('must be a JSON boolean, got %s',
                    left(v_value::text, 100)));
            END IF;
            -- JSON null: SQL NULL, refused by the shared core as tf_submit refuses NULL.
            v_notify := CASE WHEN jsonb_typeof(v_value) = 'boolean' THEN v_value::boolean END;
        END IF;

        -- Parents: task ids, and positions of earlier elements turned into their task ids.
        v_parents := NULL;
        IF v_request ? 'depends_on' OR v_request ? 'depends_on_positions' THEN
            v_parents := '{}';
            FOREACH v_list IN ARRAY ARRAY['depends_on', 'depends_on_positions'] LOOP
                v_value := v_request -> v_list;
                CONTINUE WHEN v_value IS NULL OR jsonb_typeof(v_value) = 'null';
                IF jsonb_typeof(v_value) <> 'array' THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_list, format('must be a JSON array of whole numbers, got %s',
                        left(v_value::text, 100)));
                END IF;
                FOR v_pos IN 0 .. jsonb_array_length(v_value) - 1 LOOP
                    v_elem := v_value -> v_pos;
                    IF jsonb_typeof(v_elem) <> 'number' OR v_elem::numeric <> trunc(v_elem::numeric)
                       OR v_elem::numeric NOT BETWEEN 0 AND 9223372036854775807 THEN
                        PERFORM taskforge._tf_invalid(v_prefix || v_list, format('element %s must be a whole number >= 0, got %s',
                            v_pos, left(v_elem::text, 100)));
                    END IF;
                    IF v_list = 'depends_on' THEN
                        v_parents := v_parents || (v_elem::numeric)::bigint;
                    ELSIF v_elem::numeric >= v_index THEN
                        PERFORM taskforge._tf_invalid(v_prefix || v_list, format(
                            'element %s must be the position of an earlier element (%s), got %s', v_pos,
                            CASE WHEN v_index = 0 THEN 'none: this is the first' ELSE '0..' || (v_index - 1) END, v_elem));
                    ELSE
                        v_parents := v_parents || v_ids[(v_elem::numeric)::int + 1];
                    END IF;
                END LOOP;
            END LOOP;
        END IF;

        v_queue := CASE WHEN v_request ? 'queue' THEN v_request ->> 'queue' ELSE 'default' END;
        r := taskforge._tf_submit_one(v_request ->> 'task_type', coalesce(v_request -> 'payload', '{}'::jsonb),
                                      v_queue, v_nums[1], v_nums[2], v_scheduled_at, v_request ->> 'idempotency_key',
                                      v_now, v_prefix, timeout_seconds => v_timeout, delay_seconds => v_delay,
                                      notify_finished => v_notify, traceparent => v_request ->> 'traceparent',
                                      depends_on => v_parents, rate_key => v_request ->> 'rate_key',
                                      concurrency_key => v_request ->> 'concurrency_key',
                                      ordering_key => v_request ->> 'ordering_key');
        v_ids := v_ids || r.task_id;
        IF r.due_now AND v_queue <> ALL (v_due_queues) THEN
            v_due_queues := v_due_queues || v_queue;
        END IF;
        tf_submit_many.task_id := r.task_id;
        tf_submit_many.state := r.state;
        tf_submit_many.created := r.created;
        RETURN NEXT;
    END LOOP;

    PERFORM taskforge._tf_notify_queues(v_due_queues);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_submit_many(jsonb) IS
    'Batch tf_submit: a JSON array of 1..10000 request objects (tf_submit''s parameter names as keys, delay_seconds, notify_finished, traceparent, depends_on and the flow keys included, plus depends_on_positions: earlier elements as parents), each under exactly tf_submit''s rules; one row per request in input order; one NOTIFY per queue with due work. Errors: TF400 naming requests[i].argument (also its COLUMN), TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_submit_many(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_submit_many(jsonb) TO taskforge_client;

-- >>> db/functions/tf_unschedule_periodic.sql
-- taskforge.tf_unschedule_periodic(name text) -> boolean
--
-- Purpose:    delete a periodic schedule: no tick of it is enqueued after this commits. Tasks
--             it already enqueued stay as they are (cancel them with tf_cancel).
--             Removing a schedule that does not exist is not an error: the answer is false,
--             so a deploy script can state "this schedule is gone" and run twice.
-- Parameters: name  taskforge._tf_name_pattern('schedule'): ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
-- Returns:    true when a schedule was deleted, false when there was none of that name.
-- Errors:     TF400 name NULL or not a schedule name.
-- Locks:      the schedule row (waits for a scheduler that is enqueueing it).
-- Clock:      none.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_unschedule_periodic(name text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM taskforge._tf_check_name('name', tf_unschedule_periodic.name, 'schedule');
    DELETE FROM taskforge.periodic_schedules s WHERE s.name = tf_unschedule_periodic.name;
    RETURN FOUND;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_unschedule_periodic(text) IS
    'Delete a periodic schedule; true when one was deleted, false when none had that name. Enqueued tasks stay. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_unschedule_periodic(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_unschedule_periodic(text) TO taskforge_client;

-- >>> db/schema/50_name_rules.sql
-- Name formats of the stored names, from their one home, taskforge._tf_name_pattern (which is
-- why these CHECKs, and the constraint of the domain taskforge.queue_name that every queue
-- column has, are added here, after the functions, and not in 15_domains.sql or 20_tables.sql).
--
-- Each CHECK is written with the pattern as a literal, taken from _tf_name_pattern when the
-- schema is built: a CHECK that called the function would run it (a SQL function call, about
-- 15 us) each time an UPDATE or INSERT statement is planned for execution, which is every claim
-- and every finalize (measured: 25 % of a worker turn).
DO $names$
DECLARE
    v_queue text := taskforge._tf_name_pattern('queue');
BEGIN
    EXECUTE format('ALTER TABLE taskforge.task_types ADD CONSTRAINT task_types_name_format CHECK (task_type ~ %L)',
                   taskforge._tf_name_pattern('task_type'));
    EXECUTE format('ALTER DOMAIN taskforge.queue_name ADD CONSTRAINT queue_name_format CHECK (VALUE ~ %L)', v_queue);
    EXECUTE format('ALTER TABLE taskforge.periodic_schedules'
                   ' ADD CONSTRAINT periodic_schedules_name_format CHECK (name ~ %L)',
                   taskforge._tf_name_pattern('schedule'));
END
$names$;

-- The trace context format (tasks.traceparent). A domain's constraint is prepared once per session
-- (type cache), so it may call its home, taskforge._tf_traceparent_ok, an inlined SQL expression;
-- it is checked only where a statement writes the column (tf_submit's INSERT).
ALTER DOMAIN taskforge.traceparent ADD CONSTRAINT traceparent_format CHECK (taskforge._tf_traceparent_ok(VALUE));

-- >>> db/schema/52_row_rules.sql
-- The rules across the columns of a tasks row and of an attempts row, as one CHECK constraint per
-- table that calls the rules' home (taskforge._tf_task_row_ok, taskforge._tf_attempt_row_ok).
-- Added here, after the functions. A violation names the broken rule (tasks_owner_iff_running,
-- ...) as its constraint; why a function and not the expressions written out: the header of
-- _tf_task_row_ok.
ALTER TABLE taskforge.tasks ADD CONSTRAINT tasks_row_rules CHECK (taskforge._tf_task_row_ok(
    state, attempt_count, max_attempts, owner_worker_id, lease_expires_at, finished_at,
    idempotency_key, fingerprint, cancel_reason, cancel_requested_at));
ALTER TABLE taskforge.attempts ADD CONSTRAINT attempts_row_rules CHECK (taskforge._tf_attempt_row_ok(
    state, outcome, started_at, lease_expires_at, finished_at));

-- >>> db/schema/55_triggers.sql
-- Row triggers, after the functions they call. Three: the finished notification of tasks
-- submitted with notify_finished (taskforge._tf_notify_finished, whose header says why this is
-- a trigger), the dependency rules of tasks that have children
-- (taskforge._tf_release_children), and the wake-up of an ordering key's next task
-- (taskforge._tf_wake_ordering_key). The WHEN clause keeps every other task off it: for a row without the flag an
-- UPDATE pays the test of one boolean column and queues no trigger event (measured on the worker
-- turn: docs/benchmarks.md, "The hot path in SQL"). UPDATE OF state: statements that leave the
-- state alone (renewals, cancel requests) do not even test it.
CREATE TRIGGER tasks_notify_finished
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.notify_finished)
    EXECUTE FUNCTION taskforge._tf_notify_finished();
-- The same pattern for dependencies: only a task that has children (has_children, set when a
-- child is submitted) calls the rules; every other row pays the test of one boolean column.
CREATE TRIGGER tasks_release_children
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.has_children)
    EXECUTE FUNCTION taskforge._tf_release_children();
-- And for ordering keys: only the end of a task that has one (finished_at set by this update).
CREATE TRIGGER tasks_wake_ordering_key
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.ordering_key IS NOT NULL AND new.finished_at IS NOT NULL AND old.finished_at IS NULL)
    EXECUTE FUNCTION taskforge._tf_wake_ordering_key();

-- >>> db/schema/60_views.sql
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

-- >>> db/schema/80_task_types.sql
-- Built-in synthetic task types (the handlers ship with the Python worker). Their payloads:
--   noop            {}                  does nothing
--   sleep           {"ms": int}         waits ms milliseconds
--   fail_once       {}                  retryable failure on attempt 1, success afterwards
--   fail            {}                  ordinary (terminal) error
--   retryable_fail  {}                  always a retryable error (exhausts its budget)
--   echo            any object          returns its payload as the result
--   async_noop      {}                  does nothing (an async def handler)
--   async_sleep     {"ms": int}         waits ms milliseconds (an async def handler)
-- Users add their own types with taskforge.tf_register_task_type.
SELECT taskforge.tf_register_task_type('noop', description => 'Does nothing; measures coordination cost.');
SELECT taskforge.tf_register_task_type('sleep', description => 'Waits payload.ms milliseconds.');
SELECT taskforge.tf_register_task_type(
    'fail_once', description => 'Retryable failure on attempt 1, success afterwards.'
);
SELECT taskforge.tf_register_task_type('fail', description => 'Always fails with an ordinary (terminal) error.');
SELECT taskforge.tf_register_task_type('retryable_fail', description => 'Always fails with a retryable error.');
SELECT taskforge.tf_register_task_type('echo', description => 'Returns its payload as the result.');
SELECT taskforge.tf_register_task_type(
    'async_noop', description => 'Does nothing, as an async def handler (the worker''s event loop).'
);
SELECT taskforge.tf_register_task_type(
    'async_sleep', description => 'Waits payload.ms milliseconds, as an async def handler (the worker''s event loop).'
);

-- >>> db/schema/99_finish.sql
-- Back to the migrating user.
RESET ROLE;
