-- taskforge._tf_check_fencing(task_id bigint, worker_id uuid, attempt_number int) -> void
--                                                                       (private helper)
--
-- Purpose:    validate the fencing token (task, worker, attempt) a worker gives tf_renew and
--             tf_finalize, before anything is locked or written.
-- Parameters: task_id, worker_id  must not be NULL;  attempt_number  at least 1.
-- Returns:    nothing.
-- Errors:     TF400 naming the argument (checked in the order above).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_fencing(task_id bigint, worker_id uuid, attempt_number int)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF task_id IS NULL THEN
        PERFORM taskforge._tf_invalid('task_id', 'must not be NULL');
    END IF;
    IF worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    IF attempt_number IS NULL OR attempt_number < 1 THEN
        PERFORM taskforge._tf_invalid('attempt_number', format('must be at least 1, got %s',
            coalesce(attempt_number::text, 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_fencing(bigint, uuid, int) IS
    'Private: validates the (task_id, worker_id, attempt_number) a worker passes to tf_renew and tf_finalize, or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_fencing(bigint, uuid, int) FROM PUBLIC;
