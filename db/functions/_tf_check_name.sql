-- taskforge._tf_check_name(argument text, name text, kind text) -> void  (private helper)
--
-- Purpose:    validate one queue, task type or schedule name argument against its rule
--             (taskforge._tf_name_pattern), with the one TF400 message for a bad name.
-- Parameters: argument  the parameter name for the error ('queue', 'requests[3].queue', ...).
--             name      the value; NULL is refused.
--             kind      'queue' | 'task_type' | 'schedule'.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must match <pattern>, got <quoted name or NULL>'.
-- Locks:      none.  Clock: none.  By hand: harmless.
-- Hot paths test the pattern inline first and call this only to raise.
CREATE OR REPLACE FUNCTION taskforge._tf_check_name(argument text, name text, kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF name IS NULL OR name !~ taskforge._tf_name_pattern(kind) THEN
        PERFORM taskforge._tf_invalid(argument, format('must match %s, got %s', taskforge._tf_name_pattern(kind),
            coalesce(quote_literal(left(name, 100)), 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_name(text, text, text) IS
    'Private: validates one queue or task type name (taskforge._tf_name_pattern) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_name(text, text, text) FROM PUBLIC;
