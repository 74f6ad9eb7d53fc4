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
