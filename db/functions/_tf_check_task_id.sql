-- taskforge._tf_check_task_id(argument text, task_id numeric) -> void   (private helper)
--
-- Purpose:    validate a task id a caller passes (tf_cancel, tf_retry, the fencing token of
--             tf_renew and tf_finalize, each element of the batch forms' task_ids). The public
--             functions declare task ids numeric so that any number a caller writes reaches
--             this check (TF400, not 42883 "function does not exist" or 22003); once it
--             passed they convert the id to bigint before a query uses it. A whole number
--             within bigint that names no task stays that function's business (TF404, or a
--             per-task result in the batch forms).
-- Parameters: argument  the name to report ('task_id', 'task_ids[3]').
--             task_id   the value; NULL is refused.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must not be NULL', or '<argument>: must be a whole number
--             within bigint, got <value>'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_task_id(argument text, task_id numeric)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF task_id IS NULL THEN
        PERFORM taskforge._tf_invalid(argument, 'must not be NULL');
    END IF;
    IF task_id NOT BETWEEN -9223372036854775808 AND 9223372036854775807 OR task_id <> trunc(task_id) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a whole number within bigint, got %s',
            left(task_id::text, 100)));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_task_id(text, numeric) IS
    'Private: validates a task id argument (not NULL, a whole number within bigint) or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_task_id(text, numeric) FROM PUBLIC;
