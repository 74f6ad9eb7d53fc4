-- taskforge.tf_heartbeat(worker_id uuid) -> timestamptz
--
-- Purpose:    report that a worker process is alive. A heartbeat shows recent communication
--             only: it neither extends a task lease (tf_renew does) nor revokes a task.
-- Parameters: worker_id  from tf_register_worker.
-- Returns:    the database time recorded as last_heartbeat_at.
-- Errors:     TF400 worker_id NULL; TF404 unknown or deregistered worker.
-- Locks:      the workers row (UPDATE).
-- Clock:      clock_timestamp().
-- By hand:    yes, though it makes a dead worker look alive until its next missed beats.
CREATE OR REPLACE FUNCTION taskforge.tf_heartbeat(worker_id uuid)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    IF tf_heartbeat.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    UPDATE taskforge.workers w
       SET last_heartbeat_at = greatest(v_now, w.started_at)
     WHERE w.worker_id = tf_heartbeat.worker_id AND w.stopped_at IS NULL;
    IF NOT FOUND THEN
        PERFORM taskforge._tf_unknown_worker(tf_heartbeat.worker_id);
    END IF;
    RETURN v_now;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_heartbeat(uuid) IS
    'Worker liveness beat; returns database time. Does not touch leases. Errors: TF400, TF404 (unknown or deregistered worker).';
REVOKE ALL ON FUNCTION taskforge.tf_heartbeat(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_heartbeat(uuid) TO taskforge_worker;
