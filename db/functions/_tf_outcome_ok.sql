-- taskforge._tf_outcome_ok(outcome text, result jsonb) -> boolean               (private helper)
--
-- Purpose:    the one home of the rule for how a worker may report an attempt's end in the
--             batch functions: the outcome is succeeded | failed | retryable | cancelled, and the
--             result is NULL or at most 1 MiB as JSON text and nested at most 100 levels deep
--             (taskforge._tf_json_too_deep). A plain SQL expression, inlined by the planner into
--             its callers (taskforge._tf_check_batch, taskforge._tf_valid_batch_of_one). The
--             precise error for a value it refuses, also tf_finalize's: taskforge._tf_check_outcome.
-- Parameters: outcome, result   one element of outcomes[] and results[].
-- Returns:    true when both are acceptable; false or NULL (a NULL outcome) otherwise.
-- Errors:     none (the checkers raise; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_outcome_ok(outcome text, result jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT outcome IN ('succeeded', 'failed', 'retryable', 'cancelled')
       AND (result IS NULL OR (octet_length(result::text) <= 1048576 AND NOT taskforge._tf_json_too_deep(result)))
$fn$;

COMMENT ON FUNCTION taskforge._tf_outcome_ok(text, jsonb) IS
    'Private: true when an (outcome, result) element of a batch finalize is acceptable (a known outcome; a result of at most 1 MiB, nested at most 100 levels).';
REVOKE ALL ON FUNCTION taskforge._tf_outcome_ok(text, jsonb) FROM PUBLIC;
