-- taskforge._tf_attempt_state_after(outcome text) -> text                  (private helper)
--
-- Purpose:    the final state an attempt takes for an outcome, written once for tf_finalize,
--             the batch finalize (_tf_finalize_attempts) and tf_recover:
--               succeeded -> SUCCEEDED; failed, retryable -> FAILED; cancelled -> CANCELLED;
--               lease_expired, timed_out -> ABANDONED.
-- Parameters: outcome  as stored in attempts.outcome.
-- Returns:    the attempt state, or NULL for an unknown outcome (callers validate first).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling query (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_attempt_state_after(outcome text)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT CASE outcome
        WHEN 'succeeded' THEN 'SUCCEEDED'
        WHEN 'failed' THEN 'FAILED'
        WHEN 'retryable' THEN 'FAILED'
        WHEN 'cancelled' THEN 'CANCELLED'
        WHEN 'lease_expired' THEN 'ABANDONED'
        WHEN 'timed_out' THEN 'ABANDONED'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_attempt_state_after(text) IS
    'Private: the final attempt state for an outcome (succeeded|failed|retryable|cancelled|lease_expired|timed_out).';
REVOKE ALL ON FUNCTION taskforge._tf_attempt_state_after(text) FROM PUBLIC;
