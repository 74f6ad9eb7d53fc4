-- taskforge._tf_retry_delay(task_type text, failed_attempt int) -> double precision
--                                                                          (private helper)
--
-- Purpose:    the backoff before a task's next attempt, in seconds, from its task type's policy
--             (taskforge.task_types: base, cap, jitter; the formula is tf_backoff's). A
--             function, not a subquery, so that a finalize statement pays for the lookup only
--             for the tasks that retry.
-- Parameters: task_type       the task's type.
--             failed_attempt  the number of the attempt that failed (1, 2, ...).
-- Returns:    seconds, 0 <= s <= the type's cap; 0 when the type has no row.
-- Errors:     none of its own (tf_backoff's checks pass for stored policies).
-- Locks:      none.  Clock: none (random() for the jitter).  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_retry_delay(task_type text, failed_attempt int)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE  -- random jitter
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN coalesce((SELECT taskforge.tf_backoff(_tf_retry_delay.failed_attempt, tt.backoff_base_seconds,
                                                 tt.backoff_cap_seconds, tt.backoff_jitter)
                       FROM taskforge.task_types tt WHERE tt.task_type = _tf_retry_delay.task_type), 0);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_retry_delay(text, int) IS
    'Private: seconds of backoff before the next attempt, from the task type''s policy (tf_backoff).';
REVOKE ALL ON FUNCTION taskforge._tf_retry_delay(text, int) FROM PUBLIC;
