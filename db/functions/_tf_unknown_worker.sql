-- taskforge._tf_unknown_worker(worker_id uuid) -> void                  (private helper)
--
-- Purpose:    the one "no registered worker" error, for tf_heartbeat and the claim, raised when
--             worker_id names no worker or a deregistered one.
-- Parameters: worker_id  the id that was not found.
-- Returns:    never; always raises.
-- Errors:     TF404 'worker_id: no registered worker <id> (unknown or deregistered)', COLUMN worker_id.
-- Locks:      none.  Clock: none.  By hand: harmless (it only raises).
CREATE OR REPLACE FUNCTION taskforge._tf_unknown_worker(worker_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises: never let the planner fold a call with constant arguments
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'TF404',
        MESSAGE = format('worker_id: no registered worker %s (unknown or deregistered)', worker_id),
        COLUMN = 'worker_id';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_unknown_worker(uuid) IS
    'Private: raises TF404 "worker_id: no registered worker <id> (unknown or deregistered)".';
REVOKE ALL ON FUNCTION taskforge._tf_unknown_worker(uuid) FROM PUBLIC;
