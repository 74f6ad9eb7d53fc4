-- taskforge._tf_task_state_after(outcome text, cancel_requested boolean, attempt_count int,
--                                max_attempts int) -> text                 (private helper)
--
-- Purpose:    the one home of the rule "what state does a task take when its current attempt
--             ends". Used by tf_finalize, the batch finalize (_tf_finalize_attempts) and
--             tf_recover, so the decision is written once:
--               succeeded      -> SUCCEEDED (the work happened, even if a cancel was requested)
--               cancelled      -> CANCELLED
--               any other outcome with a cancel request             -> CANCELLED
--               failed         -> FAILED (ordinary error: terminal)
--               retryable      -> RETRYING while attempt_count < max_attempts, else FAILED
--               lease_expired, timed_out
--                              -> QUEUED while attempt_count < max_attempts, else FAILED
--                                 (recovery: the attempt is over, no backoff applies)
-- Parameters: outcome           'succeeded' | 'failed' | 'retryable' | 'cancelled' | 'lease_expired'
--                               | 'timed_out'.
--             cancel_requested  tasks.cancel_requested_at IS NOT NULL.
--             attempt_count     the task's attempt count (the number of the attempt that ended).
--             max_attempts      the task's budget.
-- Returns:    'SUCCEEDED' | 'CANCELLED' | 'FAILED' | 'RETRYING' | 'QUEUED'; NULL for an unknown or NULL
--             outcome, whatever the other arguments (callers validate outcomes first).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling query (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_task_state_after(
    outcome text, cancel_requested boolean, attempt_count int, max_attempts int)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT CASE
        WHEN outcome = 'succeeded' THEN 'SUCCEEDED'
        WHEN outcome IS NULL OR outcome NOT IN ('cancelled', 'failed', 'retryable', 'lease_expired', 'timed_out') THEN NULL
        WHEN outcome = 'cancelled' OR cancel_requested THEN 'CANCELLED'
        WHEN outcome = 'failed' THEN 'FAILED'
        WHEN attempt_count < max_attempts THEN CASE outcome WHEN 'retryable' THEN 'RETRYING' ELSE 'QUEUED' END
        ELSE 'FAILED'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_state_after(text, boolean, int, int) IS
    'Private: the task state after its current attempt ends with an outcome (succeeded|failed|retryable|cancelled|lease_expired|timed_out), given a cancel request and the budget.';
REVOKE ALL ON FUNCTION taskforge._tf_task_state_after(text, boolean, int, int) FROM PUBLIC;
