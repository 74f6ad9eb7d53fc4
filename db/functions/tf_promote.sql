-- taskforge.tf_promote(max_tasks numeric DEFAULT 1000) -> TABLE(promoted int, next_due_at timestamptz)
--
-- Purpose:    move RETRYING tasks whose backoff has ended (scheduled_at <= now) back to QUEUED,
--             earliest first. Promotion creates no attempt: the next claim creates attempt N+1.
-- Parameters: max_tasks  whole number 1..100000, the batch size; call again while a full batch comes back.
-- Returns:    one row: promoted = tasks moved to QUEUED; next_due_at = earliest scheduled_at
--             of the RETRYING tasks left, or NULL (a scheduler can sleep until then); a task
--             skipped for a recorded error (below) counts with its retry_after instead.
-- Bad rows:   one row that cannot be promoted never stops the others, as in tf_recover: the
--             batch is written by one statement (taskforge._tf_promote_rows); when it raises an
--             error about a row (taskforge._tf_maintenance_row_error), the same locked batch is
--             written task by task, each in its own subtransaction; a task that fails is
--             recorded in maintenance_errors (tf_maintenance_errors; a WARNING the first time
--             the error is seen) and left out until its retry_after (60 s doubling to 1 h).
--             Its entry is deleted once the task is no longer a due RETRYING task.
-- Errors:     TF400 naming the argument; errors that are not about a row (a deadlock, a lock
--             timeout, a read-only server, a missing object) fail the call as before.
-- Locks:      FOR UPDATE SKIP LOCKED on due RETRYING rows (several schedulers split the work);
--             the maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry (due test, updated_at, retry_after).
-- By hand:    yes; it only does early what the scheduler would do.
CREATE OR REPLACE FUNCTION taskforge.tf_promote(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(promoted int, next_due_at timestamptz)
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
    v_promoted int := 0;
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_next timestamptz;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_promote.max_tasks, 1, 100000);

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_promote';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(d.task_id ORDER BY d.scheduled_at, d.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.scheduled_at
              FROM taskforge.tasks t
             WHERE t.state = 'RETRYING' AND t.scheduled_at <= v_now AND t.task_id <> ALL (v_skip)
             ORDER BY t.scheduled_at
             LIMIT tf_promote.max_tasks
               FOR UPDATE OF t SKIP LOCKED) d;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            SELECT * INTO v_rows FROM taskforge._tf_promote_rows(v_ids, v_now);
            v_promoted := v_rows.promoted;
            v_queues := v_rows.queues;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    SELECT * INTO v_rows FROM taskforge._tf_promote_rows(ARRAY[v_id], v_now);
                    v_promoted := v_promoted + v_rows.promoted;
                    v_queues := v_queues || v_rows.queues;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_promote', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of tasks that are no longer due RETRYING tasks (promoted now, or changed by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_promote'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.state = 'RETRYING' AND t.scheduled_at <= v_now);
        SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_promote';
    END IF;

    SELECT t.scheduled_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RETRYING' AND t.task_id <> ALL (v_skip)
     ORDER BY t.scheduled_at
     LIMIT 1;

    RETURN QUERY SELECT v_promoted, least(v_next, v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_promote(numeric) IS
    'Move RETRYING tasks whose backoff ended to QUEUED (SKIP LOCKED; no attempt is created). Returns count and next_due_at. A task that fails to move is skipped and recorded (tf_maintenance_errors), the others are promoted. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_promote(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_promote(numeric) TO taskforge_scheduler;
