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
