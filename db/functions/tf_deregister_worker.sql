-- taskforge.tf_deregister_worker(worker_id uuid) -> void
--
-- Purpose:    mark a worker process as stopped (graceful shutdown). Its row and the attempts
--             that name it stay (until retention: tf_prune, then tf_prune_workers). Tasks it
--             still owns are not touched: their leases run out and tf_recover requeues them,
--             exactly as after a crash. Calling it twice is harmless.
-- Parameters: worker_id  from tf_register_worker.
-- Returns:    nothing.
-- Errors:     TF400 worker_id NULL; TF404 unknown worker.
-- Locks:      the workers row (UPDATE).
-- Clock:      clock_timestamp() for stopped_at.
-- By hand:    yes; the worker can no longer claim or heartbeat afterwards.
CREATE OR REPLACE FUNCTION taskforge.tf_deregister_worker(worker_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    IF tf_deregister_worker.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    UPDATE taskforge.workers w
       SET stopped_at = coalesce(w.stopped_at, greatest(v_now, w.last_heartbeat_at))
     WHERE w.worker_id = tf_deregister_worker.worker_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404',
            MESSAGE = format('worker_id: no worker %s', tf_deregister_worker.worker_id),
            COLUMN = 'worker_id';
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_deregister_worker(uuid) IS
    'Mark a worker process stopped; owned tasks are left to lease expiry and tf_recover. Idempotent. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_deregister_worker(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_deregister_worker(uuid) TO taskforge_worker;
