-- taskforge._tf_guard_batch(task taskforge.tasks, locked bigint[], worker_id uuid,
--                            attempt_number int, at timestamptz) -> text   (private helper)
--
-- Purpose:    why a batch function (tf_renew_many, the batch finalize) may not act on one
--             element: the task does not exist, its row is held by another transaction (the
--             batch locks with SKIP LOCKED and never waits), or the ownership guard fails.
-- Parameters: task      the tasks row of the element (all NULL when no such task: LEFT JOIN);
--             locked    the task ids this call managed to lock;
--             worker_id, attempt_number, at   as taskforge._tf_guard.
-- Returns:    NULL when the element may be acted on, else 'not_found' | 'busy' | a reason of
--             taskforge._tf_guard.
-- Errors:     none.  Locks: none.  Clock: the "at" argument.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard_batch(
    task taskforge.tasks, locked bigint[], worker_id uuid, attempt_number int, at timestamptz)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause, so that it is inlined into the batch statements (see taskforge._tf_guard).
AS $fn$
    SELECT CASE
        WHEN (task).task_id IS NULL THEN 'not_found'
        WHEN NOT ((task).task_id = ANY (locked)) THEN 'busy'
        ELSE taskforge._tf_guard(task, worker_id, attempt_number, at)
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard_batch(taskforge.tasks, bigint[], uuid, int, timestamptz) IS
    'Private: not_found | busy (locked elsewhere) | the guard''s reason for one element of a batch renew or finalize; NULL when it may act.';
REVOKE ALL ON FUNCTION taskforge._tf_guard_batch(taskforge.tasks, bigint[], uuid, int, timestamptz) FROM PUBLIC;
