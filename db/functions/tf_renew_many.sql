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
-- Plans:      one cached generic plan per statement; every row is reached by primary key
--             (nested loops over the input arrays), pinned with SET enable_seqscan/hashjoin/
--             mergejoin = off so that a plan cached before a table's first ANALYZE cannot
--             scan whole tables (jit = off: those settings inflate plan costs past jit_above_cost).
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
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_ids bigint[];
    v_attempt_numbers int[];
    v_now timestamptz;
    v_lease timestamptz;
    v_locked bigint[];
BEGIN
    PERFORM taskforge._tf_check_batch(tf_renew_many.worker_id, tf_renew_many.task_ids, tf_renew_many.attempt_numbers);
    v_task_ids := tf_renew_many.task_ids;                -- checked: whole numbers within bigint
    v_attempt_numbers := tf_renew_many.attempt_numbers;  -- checked: 1 .. 2147483647
    PERFORM taskforge._tf_check_seconds('lease_seconds', tf_renew_many.lease_seconds, 0, 86400, true);

    -- Lock what is free; a row another transaction holds is reported busy, never waited for.
    v_locked := ARRAY(SELECT t.task_id FROM taskforge.tasks t
                       WHERE t.task_id = ANY (v_task_ids)
                       ORDER BY t.task_id
                         FOR UPDATE SKIP LOCKED);
    v_now := clock_timestamp();
    v_lease := v_now + make_interval(secs => tf_renew_many.lease_seconds);

    RETURN QUERY
    WITH judged AS (
        SELECT r.ord, r.task_id, r.attempt_number, t.cancel_requested_at IS NOT NULL AND t.task_id IS NOT NULL AS cancel,
               t.task_id IS NOT NULL AS found,
               taskforge._tf_guard_batch(t, v_locked, tf_renew_many.worker_id, r.attempt_number, v_now) AS reason,
               least(v_lease, t.deadline_at) AS lease
          FROM unnest(v_task_ids, v_attempt_numbers)
               WITH ORDINALITY AS r(task_id, attempt_number, ord)
          LEFT JOIN taskforge.tasks t ON t.task_id = r.task_id
    ), extended AS (
        UPDATE taskforge.tasks t
           SET lease_expires_at = j.lease, updated_at = v_now
          FROM judged j
         WHERE j.reason IS NULL AND t.task_id = j.task_id
        RETURNING t.task_id, t.lease_expires_at
    ), attempt_leases AS (
        UPDATE taskforge.attempts a
           SET lease_expires_at = j.lease
          FROM judged j
         WHERE j.reason IS NULL AND a.task_id = j.task_id AND a.attempt_number = j.attempt_number
    )
    SELECT j.task_id, j.attempt_number, e.task_id IS NOT NULL,
           e.lease_expires_at,
           CASE WHEN j.found THEN j.cancel END,
           j.reason
      FROM judged j
      LEFT JOIN extended e ON e.task_id = j.task_id
     ORDER BY j.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) IS
    'Batch tf_renew: one row per element in input order, same guard; rows locked elsewhere are skipped (SKIP LOCKED) and reported busy (lease unchanged, not lost). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_renew_many(uuid, numeric[], numeric[], double precision) TO taskforge_worker;
