-- taskforge.tf_register_worker(name text, hostname text DEFAULT NULL, pid numeric DEFAULT NULL,
--     queues text[] DEFAULT NULL, task_types text[] DEFAULT NULL,
--     heartbeat_seconds double precision DEFAULT 5) -> uuid
--
-- Purpose:    record one worker process start. Call once per process start; names may repeat
--             (the returned id is what identifies the process). heartbeat_seconds is how often
--             the process promises to call tf_heartbeat: tf_workers reports it "stale" after
--             three missed beats.
-- Parameters: name 1..200 characters. hostname (at most 255 characters), pid (a whole number
--             1..2147483647; declared numeric, so any number a caller writes gets TF400), queues
--             (queue names) and task_types (type names) are informational: NULL = unknown/any.
--             heartbeat_seconds 0 < s <= 3600.
-- Returns:    a fresh worker_id (uuid, gen_random_uuid()).
-- Errors:     TF400 naming the argument.
-- Locks:      none beyond the inserted row.
-- Clock:      clock_timestamp() for started_at and the first heartbeat.
-- By hand:    yes (it only inserts a workers row).
CREATE OR REPLACE FUNCTION taskforge.tf_register_worker(
    name text,
    hostname text DEFAULT NULL,
    pid numeric DEFAULT NULL,
    queues text[] DEFAULT NULL,
    task_types text[] DEFAULT NULL,
    heartbeat_seconds double precision DEFAULT 5)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_id uuid := gen_random_uuid();
BEGIN
    IF tf_register_worker.name IS NULL OR length(tf_register_worker.name) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid('name', 'must be 1 to 200 characters');
    END IF;
    IF length(tf_register_worker.hostname) > 255 THEN
        PERFORM taskforge._tf_invalid('hostname', format('must be at most 255 characters, got %s',
            length(tf_register_worker.hostname)));
    END IF;
    IF tf_register_worker.pid IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('pid', tf_register_worker.pid, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_names('queues', tf_register_worker.queues, 'queue');
    PERFORM taskforge._tf_check_names('task_types', tf_register_worker.task_types, 'task_type');
    PERFORM taskforge._tf_check_seconds('heartbeat_seconds', tf_register_worker.heartbeat_seconds, 0, 3600, true);
    INSERT INTO taskforge.workers
           (worker_id, name, hostname, pid, queues, task_types, heartbeat_seconds, started_at, last_heartbeat_at)
    VALUES (v_id, tf_register_worker.name, tf_register_worker.hostname, tf_register_worker.pid,
            tf_register_worker.queues, tf_register_worker.task_types, tf_register_worker.heartbeat_seconds,
            v_now, v_now);
    RETURN v_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_register_worker(text, text, numeric, text[], text[], double precision) IS
    'Record a worker process start; returns a fresh worker_id (uuid). heartbeat_seconds drives the stale rule of tf_workers. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_register_worker(text, text, numeric, text[], text[], double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_register_worker(
    text, text, numeric, text[], text[], double precision
) TO taskforge_worker;
