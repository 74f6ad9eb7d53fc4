-- taskforge._tf_claim_tasks(worker_id uuid, queues text[], lease_seconds double precision,
--     max_tasks int, task_types text[])
--   -> TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
--            priority int, max_attempts int, lease_expires_at timestamptz,
--            timeout_seconds double precision)                            (private helper)
--
-- Purpose:    the claim itself, shared by tf_claim and tf_finalize_and_claim: validate the
--             filters, check the worker, then take up to max_tasks due QUEUED tasks (state
--             QUEUED, scheduled_at <= now, attempts remaining, in queues and task_types when
--             given) in the order priority DESC, created_at, task_id, skipping rows locked by
--             others. Each claimed task becomes RUNNING under a lease with attempt number + 1
--             and gets its RUNNING attempt row, in the caller's transaction. A task with a
--             timeout_seconds gets the attempt deadline now + timeout_seconds (tasks.deadline_at
--             and attempts.deadline_at), and its lease never reaches past it.
-- Parameters: worker_id      a registered, not deregistered worker (NULL is TF400).
--             queues         text[] or NULL (any queue); an empty array matches nothing.
--             lease_seconds  0 < s <= 86400.
--             max_tasks      0..1000 (0 validates and claims nothing).
--             task_types     text[] or NULL (any type); an empty array matches nothing.
-- Returns:    0..max_tasks rows in claim order.
-- Errors:     TF400 naming the argument; TF404 unknown or deregistered worker. Nothing written.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen tasks rows; inserts attempt rows.
-- Plans:      the usual case (no QUEUED task scheduled in the future, checked with one probe of
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
--             from tasks_queued_due_idx). Locked rows are then updated by primary key.
-- Queue controls: tasks of a paused queue (taskforge.queues.paused_at) are never picked. A
--             limited queue (max_running) is picked from only by the claimer holding its
--             taskforge.queues row lock (FOR UPDATE SKIP LOCKED: a claimer that finds it locked
--             skips the queue this time), and only up to max_running minus its RUNNING count,
--             counted after the lock is taken: since every claim of the queue holds that lock
--             until it commits, the count is exact and the limit is never exceeded. Under
--             REPEATABLE READ or SERIALIZABLE (an older snapshot) limited queues are skipped.
--             With no row in taskforge.queues the claim reads one empty partial index and
--             plans as before; a queue filter just loses the restricted queues; an unfiltered
--             claim steps over their tasks with a per-call plan.
-- Clock:      clock_timestamp() once at entry: due test, lease start and attempt start.
-- By hand:    use tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_tasks(
    worker_id uuid,
    queues text[],
    lease_seconds double precision,
    max_tasks int,
    task_types text[])
RETURNS TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
              priority int, max_attempts int, lease_expires_at timestamptz,
              timeout_seconds double precision)
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
    v_now timestamptz := clock_timestamp();
    v_lease timestamptz;
    v_ids bigint[];
    v_latest timestamptz;
    v_registered boolean;
    v_registered_queues text[];
    v_registered_types text[];
    v_restricted text[];
    v_queues text[] := _tf_claim_tasks.queues;
    v_excluded text[];
    v_limited_ids bigint[];
    v_more bigint[];
    v_limited record;
    v_room bigint;
    c_candidates constant text :=
        'SELECT t.task_id FROM taskforge.tasks t'
        ' WHERE t.state = ''QUEUED'' AND t.scheduled_at <= $1 AND t.attempt_count < t.max_attempts'
        '   AND ($2::text[] IS NULL OR t.queue = ANY ($2))'
        '   AND ($3::text[] IS NULL OR t.task_type = ANY ($3))'
        '   AND ($5::text[] IS NULL OR t.queue <> ALL ($5))'
        ' ORDER BY t.priority DESC, t.created_at, t.task_id'
        ' LIMIT $4 FOR UPDATE OF t SKIP LOCKED';
BEGIN
    IF _tf_claim_tasks.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    -- The worker's registration, the latest due time of any QUEUED task (a backward step in
    -- tasks_queued_due_idx) and the paused or limited queues (queues_restricted_idx, usually
    -- empty), in one statement.
    SELECT true, w.queues, w.task_types,
           (SELECT t.scheduled_at FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' ORDER BY t.scheduled_at DESC LIMIT 1),
           (SELECT array_agg(q.queue) FROM taskforge.queues q
             WHERE q.paused_at IS NOT NULL OR q.max_running IS NOT NULL)
      INTO v_registered, v_registered_queues, v_registered_types, v_latest, v_restricted
      FROM taskforge.workers w
     WHERE w.worker_id = _tf_claim_tasks.worker_id AND w.stopped_at IS NULL;
    -- Validation (the helpers raise TF400 naming the argument). The name arrays a worker
    -- registered with were validated by tf_register_worker: the same arrays need no second pass.
    IF NOT (v_registered AND _tf_claim_tasks.queues IS NOT DISTINCT FROM v_registered_queues) THEN
        PERFORM taskforge._tf_check_names('queues', _tf_claim_tasks.queues, 'queue');
    END IF;
    IF NOT (v_registered AND _tf_claim_tasks.task_types IS NOT DISTINCT FROM v_registered_types) THEN
        PERFORM taskforge._tf_check_names('task_types', _tf_claim_tasks.task_types, 'task_type');
    END IF;
    IF _tf_claim_tasks.lease_seconds IS NULL
       OR NOT (_tf_claim_tasks.lease_seconds > 0 AND _tf_claim_tasks.lease_seconds <= 86400) THEN
        PERFORM taskforge._tf_check_seconds('lease_seconds', _tf_claim_tasks.lease_seconds, 0, 86400, true);
    END IF;
    IF _tf_claim_tasks.max_tasks IS NULL OR _tf_claim_tasks.max_tasks NOT BETWEEN 0 AND 1000 THEN
        PERFORM taskforge._tf_check_int('max_tasks', _tf_claim_tasks.max_tasks, 0, 1000);
    END IF;
    IF v_registered IS NULL THEN
        PERFORM taskforge._tf_unknown_worker(_tf_claim_tasks.worker_id);
    END IF;
    IF _tf_claim_tasks.max_tasks = 0 THEN
        RETURN;
    END IF;
    v_lease := v_now + make_interval(secs => _tf_claim_tasks.lease_seconds);

    IF v_restricted IS NOT NULL THEN
        -- Paused and limited queues leave the main pick (see Queue controls above): a queue
        -- filter loses them, an unfiltered claim steps over them.
        IF _tf_claim_tasks.queues IS NULL THEN
            v_excluded := v_restricted;
        ELSE
            v_queues := ARRAY(SELECT q FROM unnest(_tf_claim_tasks.queues) AS q WHERE q <> ALL (v_restricted));
        END IF;
        -- Each limited, unpaused queue this claim may take from, one at a time under its row
        -- lock (skipped when another claimer holds it), up to its free room. Only under READ
        -- COMMITTED, where the count below sees every claim committed before the lock.
        IF current_setting('transaction_isolation') = 'read committed' THEN
            PERFORM set_config('enable_sort', 'on', true), set_config('enable_bitmapscan', 'on', true);
            FOR v_limited IN
                SELECT q.queue, q.max_running FROM taskforge.queues q
                 WHERE q.max_running IS NOT NULL AND q.paused_at IS NULL
                   AND (_tf_claim_tasks.queues IS NULL OR q.queue = ANY (_tf_claim_tasks.queues))
                 ORDER BY q.queue
                   FOR UPDATE SKIP LOCKED
            LOOP
                SELECT v_limited.max_running - count(*) INTO v_room
                  FROM taskforge.tasks t
                 WHERE t.state = 'RUNNING' AND t.queue = v_limited.queue;
                IF v_room > 0 THEN
                    EXECUTE 'SELECT array_agg(c.task_id) FROM (' || c_candidates || ') c'
                       INTO v_more
                      USING v_now, ARRAY[v_limited.queue], _tf_claim_tasks.task_types,
                            least(v_room, _tf_claim_tasks.max_tasks), NULL::text[];
                    v_limited_ids := v_limited_ids || v_more;
                END IF;
            END LOOP;
            PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
        END IF;
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
          USING v_now, v_queues, _tf_claim_tasks.task_types, _tf_claim_tasks.max_tasks, v_excluded;
        PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
    ELSIF v_queues IS NULL AND _tf_claim_tasks.task_types IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_tasks.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSIF v_queues IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.task_type = ANY (_tf_claim_tasks.task_types)
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_tasks.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSIF _tf_claim_tasks.task_types IS NULL THEN
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.queue = v_queues[1]
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_tasks.max_tasks FOR UPDATE OF t SKIP LOCKED);
    ELSE
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.state = 'QUEUED' AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND t.queue = v_queues[1]
               AND t.task_type = ANY (_tf_claim_tasks.task_types)
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_tasks.max_tasks FOR UPDATE OF t SKIP LOCKED);
    END IF;
    IF v_limited_ids IS NOT NULL THEN
        -- Candidates of limited queues and of the main pick, merged in claim order. Rows left
        -- out stay locked (skipped by others) until this transaction ends, and are not changed.
        PERFORM set_config('enable_sort', 'on', true);
        v_ids := ARRAY(
            SELECT t.task_id FROM taskforge.tasks t
             WHERE t.task_id = ANY (v_ids || v_limited_ids)
             ORDER BY t.priority DESC, t.created_at, t.task_id
             LIMIT _tf_claim_tasks.max_tasks);
        PERFORM set_config('enable_sort', 'off', true);
    END IF;
    IF coalesce(cardinality(v_ids), 0) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE taskforge.tasks t
           SET state = 'RUNNING',
               owner_worker_id = _tf_claim_tasks.worker_id,
               deadline_at = v_now + make_interval(secs => t.timeout_seconds),
               lease_expires_at = least(v_lease, v_now + make_interval(secs => t.timeout_seconds)),
               attempt_count = t.attempt_count + 1,
               updated_at = v_now
         WHERE t.task_id = ANY (v_ids)
        RETURNING t.task_id, t.attempt_count, t.task_type, t.payload, t.queue, t.priority,
                  t.max_attempts, t.created_at, t.lease_expires_at, t.deadline_at, t.timeout_seconds
    ), attempt_rows AS (
        INSERT INTO taskforge.attempts
               (task_id, attempt_number, worker_id, state, started_at, lease_expires_at, deadline_at)
        SELECT c.task_id, c.attempt_count, _tf_claim_tasks.worker_id, 'RUNNING', v_now, c.lease_expires_at,
               c.deadline_at
          FROM claimed c
    )
    SELECT c.task_id, c.attempt_count, c.task_type, c.payload, c.queue, c.priority, c.max_attempts,
           c.lease_expires_at, c.timeout_seconds
      FROM claimed c
     ORDER BY c.priority DESC, c.created_at, c.task_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_tasks(uuid, text[], double precision, int, text[]) IS
    'Private: the claim shared by tf_claim and tf_finalize_and_claim (validation, worker check, SKIP LOCKED pick, RUNNING + lease + attempt rows).';
REVOKE ALL ON FUNCTION taskforge._tf_claim_tasks(uuid, text[], double precision, int, text[]) FROM PUBLIC;
