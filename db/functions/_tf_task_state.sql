-- taskforge._tf_task_state(task_id bigint) -> text                           (private helper)
--
-- Purpose:    the committed state of a task, read without a lock: what a batch call reports for
--             an element whose row another transaction holds (busy), and how it tells busy from
--             not_found. A function, not a subquery, so that a statement pays for the lookup
--             only when it makes one (a subquery is prepared with every execution of the
--             statement, used or not).
-- Parameters: task_id  a task id.
-- Returns:    the task's state, or NULL when there is no such task.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_task_state(task_id bigint)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN (SELECT t.state FROM taskforge.tasks t WHERE t.task_id = _tf_task_state.task_id);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_state(bigint) IS
    'Private: a task''s committed state (NULL when there is no such task), read without a lock.';
REVOKE ALL ON FUNCTION taskforge._tf_task_state(bigint) FROM PUBLIC;
