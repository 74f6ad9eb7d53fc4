-- taskforge._tf_guard_batch(locked boolean, found boolean, state text, attempt_count int,
--     owner_worker_id uuid, deadline_at timestamptz, lease_expires_at timestamptz,
--     worker_id uuid, attempt_number int, at timestamptz) -> text          (private helper)
--
-- Purpose:    why a batch call (taskforge._tf_turn, _tf_renew_attempts) may not act on one
--             element: its row is held by another transaction (the batch locks with SKIP
--             LOCKED and never waits), the task does not exist, or the ownership guard
--             (taskforge._tf_guard) fails.
-- Parameters: locked    this call locked the element's row (its columns below are then read);
--             found     the task exists: read only for an element that was not locked, so a
--                       caller passes the lookup itself (EXISTS (...)) and it runs only then;
--             the rest  as taskforge._tf_guard.
-- Returns:    NULL when the element may be acted on, else 'busy' | 'not_found' | a reason of
--             taskforge._tf_guard.
-- Errors:     none.  Locks: none.  Clock: the "at" argument.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_guard_batch(
    locked boolean, found boolean, state text, attempt_count int, owner_worker_id uuid,
    deadline_at timestamptz, lease_expires_at timestamptz, worker_id uuid, attempt_number int,
    at timestamptz)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause, so that it is inlined into the batch statements (see taskforge._tf_guard).
AS $fn$
    SELECT CASE
        WHEN NOT locked THEN CASE WHEN found THEN 'busy' ELSE 'not_found' END
        ELSE taskforge._tf_guard(state, attempt_count, owner_worker_id, deadline_at, lease_expires_at,
                                 worker_id, attempt_number, at)
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_guard_batch(boolean, boolean, text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz) IS
    'Private: busy (locked elsewhere) | not_found | the guard''s reason for one element of a batch renew or finalize; NULL when it may act.';
REVOKE ALL ON FUNCTION taskforge._tf_guard_batch(
    boolean, boolean, text, int, uuid, timestamptz, timestamptz, uuid, int, timestamptz
) FROM PUBLIC;
