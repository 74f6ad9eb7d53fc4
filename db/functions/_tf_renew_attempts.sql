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
-- Plans:      one cached generic plan per statement; every row is reached by primary key
--             (nested loops over the input arrays), pinned with SET enable_seqscan/hashjoin/
--             mergejoin = off so that a plan cached before a table's first ANALYZE cannot
--             scan whole tables (jit = off: those settings inflate plan costs past jit_above_cost).
--             No two intermediate results are joined: the cost grows linearly with the batch.
-- Clock:      clock_timestamp() read once the rows are locked: guard and new deadline.
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
    v_locked bigint[];
    v_all_locked boolean;
BEGIN
    -- Lock what is free; a row another transaction holds is reported busy, never waited for.
    v_locked := ARRAY(SELECT t.task_id FROM taskforge.tasks t
                       WHERE t.task_id = ANY (_tf_renew_attempts.task_ids)
                       ORDER BY t.task_id
                         FOR UPDATE SKIP LOCKED);
    v_all_locked := cardinality(v_locked) = cardinality(_tf_renew_attempts.task_ids);
    v_now := clock_timestamp();
    v_lease := v_now + make_interval(secs => _tf_renew_attempts.lease_seconds);

    RETURN QUERY
    WITH judged AS (
        SELECT r.ord, r.task_id, r.attempt_number, t.cancel_requested_at IS NOT NULL AS cancel,
               t.task_id IS NOT NULL AS found,
               -- Every element was locked (the usual case): the busy test needs no lookup.
               taskforge._tf_guard_batch(t, CASE WHEN v_all_locked THEN ARRAY[t.task_id] ELSE v_locked END,
                                         _tf_renew_attempts.worker_id, r.attempt_number, v_now) AS reason,
               least(v_lease, t.deadline_at) AS lease
          FROM unnest(_tf_renew_attempts.task_ids, _tf_renew_attempts.attempt_numbers)
               WITH ORDINALITY AS r(task_id, attempt_number, ord)
          LEFT JOIN taskforge.tasks t ON t.task_id = r.task_id
    ), extended AS (
        UPDATE taskforge.tasks t
           SET lease_expires_at = j.lease, updated_at = v_now
          FROM judged j
         WHERE j.reason IS NULL AND t.task_id = j.task_id
    ), attempt_leases AS (
        UPDATE taskforge.attempts a
           SET lease_expires_at = j.lease
          FROM judged j
         WHERE j.reason IS NULL AND a.task_id = j.task_id AND a.attempt_number = j.attempt_number
    )
    SELECT j.task_id, j.attempt_number, j.reason IS NULL,
           CASE WHEN j.reason IS NULL THEN j.lease END,
           CASE WHEN j.found THEN j.cancel END,
           j.reason
      FROM judged j
     ORDER BY j.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_renew_attempts(uuid, bigint[], int[], double precision) IS
    'Private: the one write path of lease renewal (tf_renew, tf_renew_many): guard per element, SKIP LOCKED (busy), lease never past the deadline; one row per element in input order.';
REVOKE ALL ON FUNCTION taskforge._tf_renew_attempts(uuid, bigint[], int[], double precision) FROM PUBLIC;
