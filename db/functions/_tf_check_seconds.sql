-- taskforge._tf_check_seconds(argument text, value double precision, min_seconds double precision,
--                             max_seconds double precision, min_exclusive boolean DEFAULT false,
--                             unit text DEFAULT 'seconds')
--   -> double precision                                             (private helper)
--
-- Purpose:    validate a duration given in seconds (docs/design.md §3: the SQL API takes seconds),
--             or another finite quantity named by unit (a rate: 'tokens per second').
-- Parameters: argument      parameter name for the error message.
--             value         seconds; NULL, NaN and +/-Infinity are rejected.
--             min_seconds, max_seconds  inclusive bounds (min exclusive when min_exclusive).
--             unit          how the message names the quantity ('seconds' by default).
-- Returns:    value unchanged.
-- Errors:     TF400 naming the argument.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_seconds(
    argument text, value double precision, min_seconds double precision,
    max_seconds double precision, min_exclusive boolean DEFAULT false, unit text DEFAULT 'seconds')
RETURNS double precision
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF value IS NULL THEN
        PERFORM taskforge._tf_invalid(argument, 'must not be NULL');
    END IF;
    IF value = 'NaN'::float8 OR value IN ('Infinity'::float8, '-Infinity'::float8) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be a finite number of %s, got %s', unit, value));
    END IF;
    IF value > max_seconds OR value < min_seconds OR (min_exclusive AND value = min_seconds) THEN
        PERFORM taskforge._tf_invalid(argument, format('must be %s %s and at most %s %s, got %s',
            CASE WHEN min_exclusive THEN 'greater than' ELSE 'at least' END, min_seconds, max_seconds, unit, value));
    END IF;
    RETURN value;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_seconds(text, double precision, double precision, double precision, boolean, text) IS
    'Private: validates a duration in seconds, or a quantity of the given unit (finite, within bounds), or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_seconds(
    text, double precision, double precision, double precision, boolean, text
) FROM PUBLIC;
