-- taskforge._tf_guard(state text, owner_worker_id uuid, attempt_count int, lease_expires_at timestamptz,
--                     worker_id uuid, attempt_number int, at timestamptz) -> text   (private helper)
--
-- Purpose:    the ownership guard shared by tf_renew and tf_finalize. A call may act on a task
--             only while the task is RUNNING, under the same attempt, owned by the same worker,
--             with its lease not yet expired at time "at".
-- Parameters: the task row's state, owner_worker_id, attempt_count, lease_expires_at; the
--             caller's worker_id and attempt_number; "at", the database time of the call.
-- Returns:    NULL when the guard holds, else the first reason it fails, checked in this order:
--             'not_running' | 'stale_attempt' | 'not_owner' | 'lease_expired'.
-- Errors:     none.  Locks: none (callers lock the row first).  Clock: the "at" argument.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard(
    state text, owner_worker_id uuid, attempt_count int, lease_expires_at timestamptz,
    worker_id uuid, attempt_number int, at timestamptz)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF state IS DISTINCT FROM 'RUNNING' THEN
        RETURN 'not_running';
    ELSIF attempt_count IS DISTINCT FROM attempt_number THEN
        RETURN 'stale_attempt';
    ELSIF owner_worker_id IS DISTINCT FROM worker_id THEN
        RETURN 'not_owner';
    ELSIF NOT (lease_expires_at > at) THEN
        RETURN 'lease_expired';
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard(text, uuid, int, timestamptz, uuid, int, timestamptz) IS
    'Private: ownership guard of renew/finalize; NULL when it holds, else not_running | stale_attempt | not_owner | lease_expired.';
REVOKE ALL ON FUNCTION taskforge._tf_guard(text, uuid, int, timestamptz, uuid, int, timestamptz) FROM PUBLIC;
