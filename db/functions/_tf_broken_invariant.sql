-- taskforge._tf_broken_invariant(problem text) -> text                     (private helper)
--
-- Purpose:    abort the caller when a rule of the state machine turns out broken in the data
--             (a row changed outside the tf_* functions), so that nothing is written on top of
--             it. Callable inside a query (it returns text for the type checker).
-- Parameters: problem  what is broken, naming the rows.
-- Returns:    never; always raises.
-- Errors:     XX000 (internal_error) with the problem as message.
-- Locks:      none.  Clock: none.  By hand: harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_broken_invariant(problem text)
RETURNS text
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = 'taskforge: ' || problem;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_broken_invariant(text) IS
    'Private: raises XX000 naming a broken state-machine rule found in the data.';
REVOKE ALL ON FUNCTION taskforge._tf_broken_invariant(text) FROM PUBLIC;
