-- taskforge.tf_recover(max_tasks numeric DEFAULT 1000)
--   -> TABLE(recovered int, failed int, next_lease_expiry timestamptz)
--
-- Purpose:    take back tasks whose owner stopped renewing. For up to max_tasks RUNNING tasks
--             whose lease has expired (oldest deadline first): the current attempt becomes
--             ABANDONED (finished_at records when, so recovery lag = finished_at -
--             lease_expires_at is queryable in tf_attempts) with outcome timed_out when the
--             lease had reached the attempt's deadline (tasks.deadline_at: the handler ran out
--             of time), else lease_expired (its worker stopped renewing), and the task is
--               QUEUED at once (no backoff) when budget remains,
--               CANCELLED when a cancel was requested while it ran,
--               FAILED (last_error type lease_expired or timed_out) when its budget is spent.
--             A row whose lease is still valid is never touched: expiry is tested in the
--             candidate scan and again on the locked row version.
-- Parameters: max_tasks  whole number 1..100000, the batch size; call again while a full batch comes back.
-- Returns:    one row: recovered = tasks put back to QUEUED; failed = tasks ended (FAILED or
--             CANCELLED); next_lease_expiry = earliest lease deadline still running, or NULL
--             (a scheduler can sleep until then).
-- Errors:     TF400 naming the argument.
-- Locks:      FOR UPDATE SKIP LOCKED on expired tasks rows: a row being renewed or finalized
--             right now is skipped (its owner is alive) and looked at on the next call.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit);
--             pg_notify('taskforge_finished', task_id) for each task submitted with
--             notify_finished that it ends FAILED or CANCELLED (the row trigger of
--             taskforge._tf_notify_finished).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry: the expiry test and the abandon time.
-- By hand:    yes; it only acts on leases that have already expired.
CREATE OR REPLACE FUNCTION taskforge.tf_recover(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(recovered int, failed int, next_lease_expiry timestamptz)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_requeued int;
    v_ended int;
    v_queues text[];
    v_next timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_recover.max_tasks, 1, 100000);

    WITH expired AS (
        -- Read under the row lock (FOR UPDATE returns the latest version of each row).
        SELECT t.task_id, o.outcome,
               taskforge._tf_task_state_after(o.outcome, t.cancel_requested_at IS NOT NULL,
                                              t.attempt_count, t.max_attempts) AS next_state
          FROM taskforge.tasks t
         CROSS JOIN LATERAL (SELECT CASE WHEN t.deadline_at <= t.lease_expires_at THEN 'timed_out'
                                         ELSE 'lease_expired' END AS outcome) o
         WHERE t.state = 'RUNNING' AND t.lease_expires_at <= v_now
         ORDER BY t.lease_expires_at
         LIMIT tf_recover.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    ), moved AS (
        UPDATE taskforge.tasks t
           SET state = e.next_state,
               scheduled_at = CASE WHEN e.next_state = 'QUEUED' THEN v_now ELSE t.scheduled_at END,
               finished_at = CASE WHEN e.next_state = 'QUEUED' THEN NULL ELSE v_now END,
               last_error = CASE WHEN e.next_state = 'FAILED' AND e.outcome = 'timed_out'
                                 THEN jsonb_build_object('type', 'timed_out', 'message',
                                      format('attempt %s ran past its deadline of %s s and no attempts remain',
                                             t.attempt_count, t.timeout_seconds))
                                 WHEN e.next_state = 'FAILED'
                                 THEN jsonb_build_object('type', 'lease_expired', 'message',
                                      format('attempt %s lost its lease and no attempts remain', t.attempt_count))
                                 ELSE t.last_error END,
               owner_worker_id = NULL,
               lease_expires_at = NULL,
               deadline_at = NULL,
               updated_at = v_now
          FROM expired e
         WHERE t.task_id = e.task_id
           AND t.state = 'RUNNING' AND t.lease_expires_at <= v_now
        RETURNING t.task_id, t.attempt_count, t.state, t.queue, e.outcome
    ), abandoned AS (
        UPDATE taskforge.attempts a
           SET state = taskforge._tf_attempt_state_after(m.outcome),
               outcome = m.outcome,
               finished_at = v_now,
               error = CASE m.outcome
                           WHEN 'timed_out' THEN jsonb_build_object('type', 'timed_out',
                                'message', 'the attempt ran past its deadline (no lease is granted beyond it)')
                           ELSE jsonb_build_object('type', 'lease_expired',
                                'message', 'the lease expired before the attempt was finalized') END
          FROM moved m
         WHERE a.task_id = m.task_id AND a.attempt_number = m.attempt_count AND a.state = 'RUNNING'
        RETURNING a.task_id
    )
    SELECT count(*) FILTER (WHERE m.state = 'QUEUED'),
           count(*) FILTER (WHERE m.state <> 'QUEUED'),
           array_agg(DISTINCT m.queue) FILTER (WHERE m.state = 'QUEUED')
      INTO v_requeued, v_ended, v_queues
      FROM moved m;

    PERFORM taskforge._tf_notify_queues(v_queues);

    SELECT t.lease_expires_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RUNNING'
     ORDER BY t.lease_expires_at
     LIMIT 1;

    RETURN QUERY SELECT v_requeued, v_ended, v_next;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_recover(numeric) IS
    'Recover RUNNING tasks with expired leases (SKIP LOCKED, expiry re-checked under the lock): attempt ABANDONED (outcome lease_expired, or timed_out when the lease reached the attempt deadline); task QUEUED if budget remains, else FAILED (CANCELLED if cancel was requested). Returns counts and next_lease_expiry. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_recover(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_recover(numeric) TO taskforge_scheduler;
