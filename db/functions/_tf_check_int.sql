-- taskforge._tf_check_int(argument text, value bigint, min_value bigint, max_value bigint) -> void
--                                                                     (private helper)
--
-- Purpose:    validate a whole-number argument (a batch size, a priority, a budget).
-- Parameters: argument  parameter name for the error message; value  the argument (NULL is
--             refused); min_value, max_value  inclusive bounds.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must be between <min> and <max>, got <value|NULL>'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_int(argument text, value bigint, min_value bigint, max_value bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF value IS NULL OR value NOT BETWEEN min_value AND max_value THEN
        PERFORM taskforge._tf_invalid(argument, format('must be between %s and %s, got %s',
            min_value, max_value, coalesce(value::text, 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_int(text, bigint, bigint, bigint) IS
    'Private: validates a whole-number argument within inclusive bounds or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_int(text, bigint, bigint, bigint) FROM PUBLIC;
