-- taskforge._tf_token_ok(task_id numeric, attempt_number numeric) -> boolean   (private helper)
--
-- Purpose:    the one home of the rule for a fencing token element of the batch functions: a
--             task id is a whole number within bigint, an attempt number a whole number from 1
--             to 2147483647. A plain SQL expression, inlined by the planner into its callers
--             (taskforge._tf_check_batch, taskforge._tf_valid_batch_of_one).
-- Parameters: task_id, attempt_number   as a caller passed them (numeric).
-- Returns:    true when both are valid; false or NULL (a NULL argument) otherwise.
-- Errors:     none (the checkers raise; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_token_ok(task_id numeric, attempt_number numeric)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT task_id BETWEEN -9223372036854775808 AND 9223372036854775807 AND task_id = trunc(task_id)
       AND attempt_number BETWEEN 1 AND 2147483647 AND attempt_number = trunc(attempt_number)
$fn$;

COMMENT ON FUNCTION taskforge._tf_token_ok(numeric, numeric) IS
    'Private: true when a (task_id, attempt_number) element is a valid fencing token (whole numbers within bigint and 1..2147483647).';
REVOKE ALL ON FUNCTION taskforge._tf_token_ok(numeric, numeric) FROM PUBLIC;
