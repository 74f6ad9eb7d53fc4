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
