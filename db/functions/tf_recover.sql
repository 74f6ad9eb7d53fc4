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
--             (a scheduler can sleep until then); a task skipped for a recorded error (below)
--             counts with its retry_after instead of its lease.
-- Bad rows:   one row that cannot be recovered never stops the others. The batch is written by
--             one set-based statement (taskforge._tf_recover_rows); when it raises an error about
--             a row (taskforge._tf_maintenance_row_error: a CHECK, a trigger, a value; not a
--             deadlock, a lock timeout, a read-only server or a missing object, which fail the
--             call as before), the same locked batch is written task by task, each in its own
--             subtransaction: a task that fails is rolled back alone, recorded in
--             maintenance_errors (tf_maintenance_errors; a WARNING the first time the error is
--             seen, via taskforge._tf_maintenance_failed) and left out of later calls until its
--             retry_after (60 s doubling to 1 h), so it neither slows every pass nor is met
--             first again by the next batch. Its entry is deleted once the task no longer
--             needs recovery (recovered at last, or changed by hand). The fallback is bounded by
--             the batch: at most max_tasks subtransactions, only in the call that met the row.
-- Errors:     TF400 naming the argument; errors that are not about a row fail the call.
-- Locks:      FOR UPDATE SKIP LOCKED on expired tasks rows: a row being renewed or finalized
--             right now is skipped (its owner is alive) and looked at on the next call; the
--             maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit);
--             pg_notify('taskforge_finished', task_id) for each task submitted with
--             notify_finished that it ends FAILED or CANCELLED (the row trigger of
--             taskforge._tf_notify_finished).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry: the expiry test, the abandon time, retry_after.
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
    v_skip bigint[];
    v_has_errors boolean;
    v_ids bigint[];
    v_id bigint;
    v_rows record;
    v_requeued int := 0;
    v_ended int := 0;
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_next timestamptz;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_recover.max_tasks, 1, 100000);

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_recover';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    -- FOR UPDATE returns the latest version of each row and re-checks the WHERE on it.
    SELECT coalesce(array_agg(c.task_id ORDER BY c.lease_expires_at, c.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.lease_expires_at
              FROM taskforge.tasks t
             WHERE t.state = 'RUNNING' AND t.lease_expires_at <= v_now AND t.task_id <> ALL (v_skip)
             ORDER BY t.lease_expires_at
             LIMIT tf_recover.max_tasks
               FOR UPDATE OF t SKIP LOCKED) c;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            SELECT * INTO v_rows FROM taskforge._tf_recover_rows(v_ids, v_now);
            v_requeued := v_rows.requeued;
            v_ended := v_rows.ended;
            v_queues := v_rows.queues;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    SELECT * INTO v_rows FROM taskforge._tf_recover_rows(ARRAY[v_id], v_now);
                    v_requeued := v_requeued + v_rows.requeued;
                    v_ended := v_ended + v_rows.ended;
                    v_queues := v_queues || v_rows.queues;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_recover', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of tasks that need no recovery any more (recovered now, or changed by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_recover'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.state = 'RUNNING' AND t.lease_expires_at <= v_now);
        SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_recover';
    END IF;

    SELECT t.lease_expires_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RUNNING' AND t.task_id <> ALL (v_skip)
     ORDER BY t.lease_expires_at
     LIMIT 1;

    RETURN QUERY SELECT v_requeued, v_ended, least(v_next, v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_recover(numeric) IS
    'Recover RUNNING tasks with expired leases (SKIP LOCKED, expiry re-checked under the lock): attempt ABANDONED (outcome lease_expired, or timed_out when the lease reached the attempt deadline); task QUEUED if budget remains, else FAILED (CANCELLED if cancel was requested). Returns counts and next_lease_expiry. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. A task that fails to recover is skipped and recorded (tf_maintenance_errors), the others are recovered. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_recover(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_recover(numeric) TO taskforge_scheduler;
