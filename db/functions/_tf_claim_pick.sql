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
