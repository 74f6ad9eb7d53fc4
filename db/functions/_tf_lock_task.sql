-- taskforge._tf_lock_task(task_id bigint) -> taskforge.tasks          (private helper)
--
-- Purpose:    lock one task row for the rest of the caller's transaction and return it; the
--             first step of tf_renew, tf_finalize, tf_cancel and tf_retry, which all decide
--             on the row's current version and must serialise with each other and with
--             tf_recover on the same task.
-- Parameters: task_id  not NULL (callers validate first).
-- Returns:    the locked tasks row.
-- Errors:     TF404 'task_id: no task <id>'.
-- Locks:      SELECT ... FOR UPDATE on that row (waits for a concurrent holder; the Python
--             worker bounds the wait with lock_timeout).
-- Clock:      none.  By hand: only inside a transaction you end quickly.
CREATE OR REPLACE FUNCTION taskforge._tf_lock_task(task_id bigint)
RETURNS taskforge.tasks
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task taskforge.tasks%ROWTYPE;
BEGIN
    SELECT * INTO v_task FROM taskforge.tasks t WHERE t.task_id = _tf_lock_task.task_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404',
            MESSAGE = format('task_id: no task %s', _tf_lock_task.task_id), COLUMN = 'task_id';
    END IF;
    RETURN v_task;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_lock_task(bigint) IS
    'Private: SELECT ... FOR UPDATE of one task, returned as a row; TF404 when there is none.';
REVOKE ALL ON FUNCTION taskforge._tf_lock_task(bigint) FROM PUBLIC;
