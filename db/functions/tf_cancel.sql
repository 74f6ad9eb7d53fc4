-- taskforge.tf_cancel(task_id numeric, reason text DEFAULT NULL)
--   -> TABLE(task_state text, cancel_requested boolean)
--
-- Purpose:    stop a task.
--               BLOCKED / QUEUED / RETRYING -> CANCELLED now (it never runs again); the
--                                     BLOCKED descendants of a task that has children end
--                                     CANCELLED too, cancel_reason 'dependency_failed'
--                                     (taskforge._tf_release_children).
--               RUNNING            -> cancel requested: the task keeps running; tf_renew reports
--                                     cancel_requested = true to its worker; at tf_finalize a
--                                     success stays SUCCEEDED (the work happened) and any other
--                                     outcome ends CANCELLED, never RETRYING; if the lease
--                                     expires instead, tf_recover ends it CANCELLED.
--               SUCCEEDED / FAILED / CANCELLED -> returned unchanged.
--             Handlers are never pre-empted: cancellation of running work is cooperative.
-- Parameters: task_id  a whole number within bigint (declared numeric: any number a caller
--             writes gets TF400 naming it, not 42883);
--             reason  free text (at most 1,000 characters kept) or NULL.
-- Returns:    one row: the state after the call and whether a cancel has been requested.
-- Errors:     TF400 task_id NULL or not a whole number within bigint; TF404 no such task.
-- Locks:      the tasks row FOR UPDATE.
-- Notify:     when it ends a BLOCKED, QUEUED or RETRYING task submitted with notify_finished:
--             pg_notify('taskforge_finished', task_id), on commit (the row trigger of
--             taskforge._tf_notify_finished). A cancel request on a RUNNING task notifies
--             nothing until the task ends.
-- Clock:      clock_timestamp() at entry.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_cancel(task_id numeric, reason text DEFAULT NULL)
RETURNS TABLE(task_state text, cancel_requested boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_now timestamptz := clock_timestamp();
    v_task taskforge.tasks%ROWTYPE;
    v_reason text := left(tf_cancel.reason, 1000);
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_cancel.task_id);
    v_task_id := tf_cancel.task_id;  -- checked: a whole number within bigint
    v_task := taskforge._tf_lock_task(v_task_id);

    IF v_task.state IN ('BLOCKED', 'QUEUED', 'RETRYING') THEN
        UPDATE taskforge.tasks t
           SET state = 'CANCELLED', parents_pending = 0, cancel_requested_at = v_now, cancel_reason = v_reason,
               finished_at = v_now, updated_at = v_now
         WHERE t.task_id = v_task_id;
        RETURN QUERY SELECT 'CANCELLED'::text, true;
    ELSIF v_task.state = 'RUNNING' THEN
        IF v_task.cancel_requested_at IS NULL THEN
            UPDATE taskforge.tasks t
               SET cancel_requested_at = v_now, cancel_reason = v_reason, updated_at = v_now
             WHERE t.task_id = v_task_id;
        END IF;
        RETURN QUERY SELECT 'RUNNING'::text, true;
    ELSE
        RETURN QUERY SELECT v_task.state::text, v_task.cancel_requested_at IS NOT NULL;
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_cancel(numeric, text) IS
    'Cancel a task: BLOCKED/QUEUED/RETRYING -> CANCELLED now (BLOCKED descendants too, dependency_failed); RUNNING -> cancel requested (honoured at finalize/recover); terminal unchanged. Ending a task submitted with notify_finished sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_cancel(numeric, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_cancel(numeric, text) TO taskforge_client;
