-- taskforge._tf_check_fencing(task_id numeric, worker_id uuid, attempt_number numeric) -> void
--                                                                       (private helper)
--
-- Purpose:    validate the fencing token (task, worker, attempt) a worker gives tf_renew and
--             tf_finalize, before anything is locked or written.
-- Parameters: task_id  a whole number within bigint (taskforge._tf_check_task_id).
--             worker_id  must not be NULL.
--             attempt_number  a whole number from 1 to 2147483647 (the type of attempt numbers).
--             The public functions declare task_id and attempt_number numeric, so that any
--             number a caller writes reaches this check (TF400, not 42883 or 22003); once it
--             passed, they convert them to bigint and int before any query uses them.
-- Returns:    nothing.
-- Errors:     TF400 naming the argument (checked in the order above).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_fencing(task_id numeric, worker_id uuid, attempt_number numeric)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    -- The bounds are tested inline first: the checker's call costs more than the test.
    IF task_id IS NULL OR task_id NOT BETWEEN -9223372036854775808 AND 9223372036854775807 OR task_id <> trunc(task_id) THEN
        PERFORM taskforge._tf_check_task_id('task_id', task_id);
    END IF;
    IF worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    IF attempt_number IS NULL OR attempt_number NOT BETWEEN 1 AND 2147483647 OR attempt_number <> trunc(attempt_number) THEN
        PERFORM taskforge._tf_check_int('attempt_number', attempt_number, 1, 2147483647);
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_fencing(numeric, uuid, numeric) IS
    'Private: validates the (task_id, worker_id, attempt_number) a worker passes to tf_renew and tf_finalize, or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_fencing(numeric, uuid, numeric) FROM PUBLIC;
