-- taskforge._tf_invalid(argument text, problem text) -> void       (private helper)
--
-- Purpose:    raise the invalid-argument error every public function uses, so any client can
--             branch on one SQLSTATE and read which argument was wrong.
-- Parameters: argument  the parameter name as callers pass it with =>, e.g. 'priority'.
--             problem   what is wrong, e.g. 'must be between -32768 and 32767, got 40000'.
-- Returns:    never; always raises.
-- Errors:     TF400 with MESSAGE '<argument>: <problem>' and COLUMN = argument.
-- Locks:      none.  Clock: none.
-- By hand:    harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_invalid(argument text, problem text)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call with constant arguments
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'TF400',
        MESSAGE = argument || ': ' || problem,
        COLUMN  = argument;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_invalid(text, text) IS
    'Private: raises TF400 "<argument>: <problem>". Used by every tf_* validator.';
REVOKE ALL ON FUNCTION taskforge._tf_invalid(text, text) FROM PUBLIC;
