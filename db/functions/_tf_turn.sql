-- taskforge._tf_turn(worker_id uuid, task_ids bigint[], attempt_numbers int[], outcomes text[],
--     results jsonb[], errors jsonb[], claim_ids bigint[], lease_seconds double precision,
--     now timestamptz)
--   -> TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
--            reason text, task_type text, payload jsonb, queue text, priority int,
--            max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision)
--                                                                        (private helper)
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
--             columns of tf_claim). The kind column says which.
-- Errors:     XX000 (taskforge._tf_broken_invariant) when a task passed the guard but its
--             attempt row was not RUNNING (see tf_invariant_violations); the statement, like any
--             error, writes nothing.
-- Locks:      FOR UPDATE SKIP LOCKED on the finalize elements' tasks rows (a row another
--             transaction holds is reported busy, never waited for; rows the caller locked
--             already are its own), then the rows it writes.
-- Plans:      two statements, each with one cached generic plan: the lock, then the write.
--             Every row is reached by primary key (nested loops over the input arrays), pinned
--             with SET enable_seqscan/hashjoin/mergejoin = off so that a plan cached before a
--             table's first ANALYZE cannot scan whole tables (jit = off: those settings inflate
--             plan costs past jit_above_cost); each UPDATE also names its rows by the input ids
--             (task_id = ANY (...)), so a generic plan cached while a table was small, which may
--             start the join from the table, still reads only those rows through its primary
--             key. Nothing in the write joins two intermediate results, so its cost grows
--             linearly with the batch.
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
              max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision)
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
    v_locked bigint[];
    v_all_locked boolean := true;
    v_finalize int := coalesce(cardinality(_tf_turn.task_ids), 0);
    v_touched bigint[] := _tf_turn.task_ids || _tf_turn.claim_ids;
BEGIN
    IF v_finalize = 0 AND coalesce(cardinality(_tf_turn.claim_ids), 0) = 0 THEN
        RETURN;
    END IF;
    IF v_finalize > 0 THEN
        -- Lock what is free; a row another transaction holds is reported busy, never waited for.
        v_locked := ARRAY(SELECT t.task_id FROM taskforge.tasks t
                           WHERE t.task_id = ANY (_tf_turn.task_ids)
                           ORDER BY t.task_id
                             FOR UPDATE SKIP LOCKED);
        v_all_locked := cardinality(v_locked) = v_finalize;
    END IF;

    RETURN QUERY
    WITH req AS (
        SELECT r.ord, r.task_id, r.attempt_number, r.outcome, r.result, r.error
          FROM unnest(_tf_turn.task_ids, _tf_turn.attempt_numbers, _tf_turn.outcomes,
                      _tf_turn.results, _tf_turn.errors)
               WITH ORDINALITY AS r(task_id, attempt_number, outcome, result, error, ord)
    ), judged AS (
        SELECT req.ord, req.task_id, req.attempt_number, req.outcome,
               CASE WHEN req.outcome = 'succeeded' THEN req.result END AS result,
               CASE WHEN req.outcome <> 'succeeded' THEN taskforge._tf_cap_error(req.error) END AS error,
               t.state AS old_state,
               -- Every element was locked (the usual case): the busy test needs no lookup.
               taskforge._tf_guard_batch(t, CASE WHEN v_all_locked THEN ARRAY[t.task_id] ELSE v_locked END,
                                         _tf_turn.worker_id, req.attempt_number, v_now) AS reason,
               taskforge._tf_task_state_after(req.outcome, t.cancel_requested_at IS NOT NULL,
                                              t.attempt_count, t.max_attempts) AS new_state
          FROM req
          LEFT JOIN taskforge.tasks t ON t.task_id = req.task_id
    ), change AS (
        -- What happens to each tasks row: the finalize elements that passed the guard, then
        -- the claimed tasks (outcome NULL), with their position in the output.
        SELECT j.task_id, j.ord, j.new_state, j.outcome, j.result, j.error, j.attempt_number
          FROM judged j
         WHERE j.reason IS NULL
        UNION ALL
        SELECT c.task_id, c.ord, 'RUNNING', NULL, NULL, NULL, NULL
          FROM unnest(_tf_turn.claim_ids) WITH ORDINALITY AS c(task_id, ord)
    ), moved AS (
        UPDATE taskforge.tasks t
           SET state = c.new_state,
               owner_worker_id = CASE WHEN c.outcome IS NULL THEN _tf_turn.worker_id END,
               lease_expires_at = CASE WHEN c.outcome IS NULL
                                       THEN least(v_now + make_interval(secs => _tf_turn.lease_seconds),
                                                  v_now + make_interval(secs => t.timeout_seconds)) END,
               deadline_at = CASE WHEN c.outcome IS NULL THEN v_now + make_interval(secs => t.timeout_seconds) END,
               attempt_count = CASE WHEN c.outcome IS NULL THEN t.attempt_count + 1 ELSE t.attempt_count END,
               scheduled_at = CASE WHEN c.new_state = 'RETRYING'
                                   THEN v_now + make_interval(secs => (
                                       SELECT taskforge.tf_backoff(c.attempt_number, tt.backoff_base_seconds,
                                                                   tt.backoff_cap_seconds, tt.backoff_jitter)
                                         FROM taskforge.task_types tt WHERE tt.task_type = t.task_type))
                                   ELSE t.scheduled_at END,
               result = CASE WHEN c.outcome = 'succeeded' THEN c.result ELSE t.result END,
               last_error = CASE WHEN c.outcome IS NULL OR c.outcome = 'succeeded' THEN t.last_error ELSE c.error END,
               finished_at = CASE WHEN c.new_state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN v_now END,
               updated_at = v_now
          FROM change c
         WHERE t.task_id = c.task_id
           AND t.task_id = ANY (v_touched)  -- an index condition whichever side the join starts from
           -- A claimed row is QUEUED (the caller locked it so); anything else is left alone.
           AND (c.outcome IS NOT NULL OR t.state = 'QUEUED')
        RETURNING t.task_id, c.ord, c.outcome, c.result, c.error, t.attempt_count, t.task_type, t.payload,
                  t.queue, t.priority, t.max_attempts, t.lease_expires_at, t.deadline_at, t.timeout_seconds
    ), ended AS (
        UPDATE taskforge.attempts a
           SET state = taskforge._tf_attempt_state_after(m.outcome),
               outcome = m.outcome,
               finished_at = v_now,
               result = m.result,
               error = m.error
          FROM moved m
         WHERE m.outcome IS NOT NULL
           AND a.task_id = m.task_id AND a.attempt_number = m.attempt_count AND a.state = 'RUNNING'
           AND a.task_id = ANY (_tf_turn.task_ids)  -- as in moved: never a walk of all attempts
        RETURNING a.task_id
    ), started AS (
        INSERT INTO taskforge.attempts
               (task_id, attempt_number, worker_id, state, started_at, lease_expires_at, deadline_at)
        SELECT m.task_id, m.attempt_count, _tf_turn.worker_id, 'RUNNING', v_now, m.lease_expires_at, m.deadline_at
          FROM moved m
         WHERE m.outcome IS NULL
    ), broken AS (
        -- A task that passed the guard must have had its RUNNING attempt ended: counted, so
        -- that no element is matched against another (the usual case costs two counts).
        SELECT (SELECT count(*) FROM ended) <> (SELECT count(*) FROM judged WHERE reason IS NULL) AS found
    )
    SELECT o.kind, o.task_id, o.attempt_number, o.accepted, o.task_state, o.reason, o.task_type, o.payload,
           o.queue, o.priority, o.max_attempts, o.lease_expires_at, o.timeout_seconds
      FROM (
        SELECT 1 AS part, j.ord, 'finalized'::text AS kind, j.task_id, j.attempt_number,
               j.reason IS NULL AS accepted,
               CASE WHEN j.reason IS NULL THEN j.new_state ELSE j.old_state END AS task_state,
               CASE WHEN j.reason IS NULL AND (SELECT found FROM broken)
                    THEN taskforge._tf_broken_invariant(format(
                        'task %s is RUNNING under attempt %s but that attempt row is not RUNNING (see tf_invariant_violations)',
                        j.task_id, j.attempt_number))
                    ELSE j.reason END AS reason,
               NULL::text AS task_type, NULL::jsonb AS payload, NULL::text AS queue, NULL::int AS priority,
               NULL::int AS max_attempts, NULL::timestamptz AS lease_expires_at,
               NULL::double precision AS timeout_seconds
          FROM judged j
        UNION ALL
        SELECT 2, m.ord, 'claimed', m.task_id, m.attempt_count, NULL, NULL, NULL, m.task_type, m.payload,
               m.queue, m.priority, m.max_attempts, m.lease_expires_at, m.timeout_seconds
          FROM moved m
         WHERE m.outcome IS NULL
      ) o
     ORDER BY o.part, o.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_turn(uuid, bigint[], int[], text[], jsonb[], jsonb[], bigint[], double precision, timestamptz) IS
    'Private: the one write path of finalize and claim: ends the given attempts (guard per element, SKIP LOCKED: busy) and starts attempts of the picked tasks, in one statement. Rows: finalized (input order), then claimed (claim order).';
REVOKE ALL ON FUNCTION taskforge._tf_turn(uuid, bigint[], int[], text[], jsonb[], jsonb[], bigint[], double precision, timestamptz) FROM PUBLIC;
