-- taskforge._tf_check_names(argument text, names text[], kind text) -> void   (private helper)
--
-- Purpose:    validate an array of queue names or task type names given to tf_claim or
--             tf_register_worker, with the same rules tf_submit and tf_register_task_type apply
--             to a single name. NULL (the whole array) is allowed and means "any"; an empty
--             array is allowed (it matches nothing); a NULL or malformed element is not.
-- Parameters: argument  the parameter name for the error message ('queues', 'task_types').
--             names     text[] or NULL.
--             kind      'queue' | 'task_type' (the patterns: taskforge._tf_name_pattern)
-- Returns:    nothing.
-- Errors:     TF400 naming the argument and the first bad element.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_names(argument text, names text[], kind text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_pattern text := taskforge._tf_name_pattern(kind);
    v_bad text;
    v_found boolean;
BEGIN
    IF names IS NULL THEN
        RETURN;
    END IF;
    IF array_ndims(names) > 1 THEN
        PERFORM taskforge._tf_invalid(argument, 'must be a one-dimensional array');
    END IF;
    SELECT true, n INTO v_found, v_bad
      FROM unnest(names) AS n
     WHERE n IS NULL OR n !~ v_pattern
     LIMIT 1;
    IF v_found THEN
        PERFORM taskforge._tf_invalid(argument, format('every element must match %s, got %s',
            v_pattern, coalesce(quote_literal(left(v_bad, 100)), 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_names(text, text[], text) IS
    'Private: validates an array of queue or task type names (NULL = any) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_names(text, text[], text) FROM PUBLIC;
