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
