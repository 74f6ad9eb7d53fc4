-- taskforge._tf_recover_rows(task_ids bigint[], now timestamptz)
--   -> TABLE(requeued int, ended int, queues text[])                        (private helper)
--
-- Purpose:    the writes of tf_recover for the given tasks, which the caller has locked (FOR
--             UPDATE) and found RUNNING with an expired lease: in one statement the current
--             attempt becomes ABANDONED (outcome timed_out when the lease had reached the
--             attempt's deadline, else lease_expired; finished_at = now) and the task QUEUED at
--             once when budget remains, CANCELLED when a cancel was requested while it ran, else
--             FAILED (last_error type lease_expired or timed_out). Expiry is tested again here,
--             so a task no longer RUNNING or whose lease is valid is left alone. Each task is read
--             by primary key, whatever the statistics of the partial indexes say.
--             tf_recover calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             now       tf_recover's clock.
-- Returns:    one row: requeued = tasks put back to QUEUED; ended = tasks FAILED or CANCELLED;
--             queues = the queues of the requeued tasks (duplicates possible; for NOTIFY).
-- Errors:     whatever a write raises (a CHECK, a trigger, ...): nothing is written then.
-- Locks:      the given tasks rows (already the caller's) and their current attempts.
-- Plans:      SET plan_cache_mode = force_custom_plan (the ids are a parameter).
-- Clock:      the caller's now.
-- By hand:    no: call tf_recover, which locks and checks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_recover_rows(task_ids bigint[], now timestamptz)
RETURNS TABLE(requeued int, ended int, queues text[])
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_recover_rows.now;
BEGIN
    RETURN QUERY
    WITH expired AS MATERIALIZED (
        -- Each given task by primary key (LIMIT 1 keeps the tests below out of the lookup, so no
        -- plan can walk tasks_lease_expiry_idx once per task), then the expiry test.
        SELECT t.task_id, o.outcome,
               taskforge._tf_task_state_after(o.outcome, t.cancel_requested_at IS NOT NULL,
                                              t.attempt_count, t.max_attempts) AS next_state
          FROM unnest(_tf_recover_rows.task_ids) AS i(task_id)
         CROSS JOIN LATERAL (SELECT x.task_id, x.state, x.lease_expires_at, x.deadline_at, x.cancel_requested_at,
                                    x.attempt_count, x.max_attempts
                               FROM taskforge.tasks x WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
         CROSS JOIN LATERAL (SELECT CASE WHEN t.deadline_at <= t.lease_expires_at THEN 'timed_out'
                                         ELSE 'lease_expired' END AS outcome) o
         WHERE t.state = 'RUNNING' AND t.lease_expires_at <= v_now
    ), moved AS (
        -- Joined by task_id alone: the rows are the caller's (locked), tested above.
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
    SELECT (count(*) FILTER (WHERE m.state = 'QUEUED'))::int,
           (count(*) FILTER (WHERE m.state <> 'QUEUED'))::int,
           coalesce(array_agg(m.queue::text) FILTER (WHERE m.state = 'QUEUED'), '{}')
      FROM moved m;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_recover_rows(bigint[], timestamptz) IS
    'Private: tf_recover''s writes for locked expired tasks (attempt ABANDONED, task QUEUED/FAILED/CANCELLED); returns the counts and the requeued queues.';
REVOKE ALL ON FUNCTION taskforge._tf_recover_rows(bigint[], timestamptz) FROM PUBLIC;
