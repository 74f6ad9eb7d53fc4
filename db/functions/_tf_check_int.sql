-- taskforge._tf_check_int(argument text, value numeric, min_value bigint, max_value bigint) -> void
--                                                                     (private helper)
--
-- Purpose:    validate a whole-number argument (a batch size, a priority, a budget).
-- Parameters: argument  parameter name for the error message; value  the argument (NULL is
--             refused); min_value, max_value  inclusive bounds. value is numeric so that the
--             public functions, whose whole-number parameters are numeric (any number a caller
--             writes reaches the body: 3000000000, '99999999999999999999', 2.5), check them here.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must be between <min> and <max>, got <value|NULL>', or
--             '<argument>: must be a whole number between <min> and <max>, got 2.5'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_int(argument text, value numeric, min_value bigint, max_value bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF value IS NULL OR value NOT BETWEEN min_value AND max_value THEN
        PERFORM taskforge._tf_invalid(argument, format('must be between %s and %s, got %s',
            min_value, max_value, coalesce(left(value::text, 100), 'NULL')));
    END IF;
    IF value <> trunc(value) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a whole number between %s and %s, got %s',
            min_value, max_value, left(value::text, 100)));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_int(text, numeric, bigint, bigint) IS
    'Private: validates a whole-number argument within inclusive bounds or raises TF400 naming it.';
REVOKE ALL ON FUNCTION taskforge._tf_check_int(text, numeric, bigint, bigint) FROM PUBLIC;
