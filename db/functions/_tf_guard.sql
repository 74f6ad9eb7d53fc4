-- taskforge._tf_guard(state text, attempt_count int, owner_worker_id uuid, deadline_at timestamptz,
--     lease_expires_at timestamptz, worker_id uuid, attempt_number int, at timestamptz)
--   -> text                                                                    (private helper)
--
-- Purpose:    the ownership guard shared by tf_renew, tf_finalize and their batch forms. A call
--             may act on a task only while the task is RUNNING, under the same attempt, owned
--             by the same worker, with its deadline not passed and its lease not yet expired at
--             time "at".
-- Parameters: state, attempt_count, owner_worker_id, deadline_at, lease_expires_at
--                   the task's columns, from its row as locked by the caller (columns, not the
--                   row: a whole-row value would be built, payload included, for every element
--                   of a batch);
--             worker_id, attempt_number  the caller's fencing token; "at", the database time of
--             the call.
-- Returns:    NULL when the guard holds, else the first reason it fails, checked in this order:
--             'not_running' | 'stale_attempt' | 'not_owner' | 'timed_out' (the attempt's
--             deadline has passed: no lease reaches past it) | 'lease_expired'.
-- Errors:     none.  Locks: none (callers lock the row first).  Clock: the "at" argument.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard(
    state text, attempt_count int, owner_worker_id uuid, deadline_at timestamptz,
    lease_expires_at timestamptz, worker_id uuid, attempt_number int, at timestamptz)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only built-in operators, and every caller is a
-- taskforge function whose search_path is pinned.
AS $fn$
    SELECT CASE
        WHEN state IS DISTINCT FROM 'RUNNING' THEN 'not_running'
        WHEN attempt_count IS DISTINCT FROM attempt_number THEN 'stale_attempt'
        WHEN owner_worker_id IS DISTINCT FROM worker_id THEN 'not_owner'
        WHEN deadline_at <= at THEN 'timed_out'
        WHEN lease_expires_at IS NULL OR lease_expires_at <= at THEN 'lease_expired'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard(text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz) IS
    'Private: ownership guard of renew/finalize; NULL when it holds, else not_running | stale_attempt | not_owner | timed_out | lease_expired.';
REVOKE ALL ON FUNCTION taskforge._tf_guard(
    text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz
) FROM PUBLIC;
