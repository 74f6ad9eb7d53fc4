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
