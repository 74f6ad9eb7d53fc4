-- taskforge.tf_scheduler_heartbeat(scheduler_id uuid, name text, hostname text DEFAULT NULL,
--     pid numeric DEFAULT NULL, heartbeat_seconds double precision DEFAULT 5,
--     stopping boolean DEFAULT false) -> timestamptz
--
-- Purpose:    report that a scheduler process is alive (the durable signal behind tf_schedulers
--             and `taskforge healthcheck`). The first call for a scheduler_id records the process
--             start; later calls move last_heartbeat_at. heartbeat_seconds is how often the
--             process promises to call: tf_schedulers reports it "stale" after three missed
--             beats. The last call of a clean stop passes stopping => true ("stopped").
-- Parameters: scheduler_id  chosen by the process at start (a fresh uuid per process start).
--             name 1..200 characters; hostname at most 255 characters; pid a whole number
--             1..2147483647 (declared numeric, so any number a caller writes gets TF400;
--             hostname and pid NULL = unknown). name, hostname, pid and heartbeat_seconds are recorded from
--             the latest call. heartbeat_seconds 0 < s <= 3600. stopping not NULL.
-- Returns:    the database time recorded as last_heartbeat_at.
-- Errors:     TF400 naming the argument; TF409 scheduler_id already stopped (a new process start
--             needs a new id). Nothing is written on an error.
-- Locks:      the schedulers row (INSERT ... ON CONFLICT DO UPDATE).
-- Clock:      clock_timestamp().
-- By hand:    yes, though it makes a dead scheduler look alive until its next missed beats.
CREATE OR REPLACE FUNCTION taskforge.tf_scheduler_heartbeat(
    scheduler_id uuid,
    name text,
    hostname text DEFAULT NULL,
    pid numeric DEFAULT NULL,
    heartbeat_seconds double precision DEFAULT 5,
    stopping boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_at timestamptz;
BEGIN
    IF tf_scheduler_heartbeat.scheduler_id IS NULL THEN
        PERFORM taskforge._tf_invalid('scheduler_id', 'must not be NULL');
    END IF;
    IF tf_scheduler_heartbeat.name IS NULL OR length(tf_scheduler_heartbeat.name) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid('name', 'must be 1 to 200 characters');
    END IF;
    IF length(tf_scheduler_heartbeat.hostname) > 255 THEN
        PERFORM taskforge._tf_invalid('hostname', format('must be at most 255 characters, got %s',
            length(tf_scheduler_heartbeat.hostname)));
    END IF;
    IF tf_scheduler_heartbeat.pid IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('pid', tf_scheduler_heartbeat.pid, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_seconds('heartbeat_seconds', tf_scheduler_heartbeat.heartbeat_seconds, 0, 3600, true);
    IF tf_scheduler_heartbeat.stopping IS NULL THEN
        PERFORM taskforge._tf_invalid('stopping', 'must not be NULL');
    END IF;

    INSERT INTO taskforge.schedulers AS s
           (scheduler_id, name, hostname, pid, heartbeat_seconds, started_at, last_heartbeat_at, stopped_at)
    VALUES (tf_scheduler_heartbeat.scheduler_id, tf_scheduler_heartbeat.name, tf_scheduler_heartbeat.hostname,
            tf_scheduler_heartbeat.pid, tf_scheduler_heartbeat.heartbeat_seconds, v_now, v_now,
            CASE WHEN tf_scheduler_heartbeat.stopping THEN v_now END)
    ON CONFLICT (scheduler_id) DO UPDATE
       SET name = excluded.name,
           hostname = excluded.hostname,
           pid = excluded.pid,
           heartbeat_seconds = excluded.heartbeat_seconds,
           last_heartbeat_at = greatest(v_now, s.started_at),
           stopped_at = CASE WHEN tf_scheduler_heartbeat.stopping THEN greatest(v_now, s.started_at) END
     WHERE s.stopped_at IS NULL
    RETURNING s.last_heartbeat_at INTO v_at;
    IF v_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('scheduler_id: scheduler %s has stopped; a new process start needs a new id',
                tf_scheduler_heartbeat.scheduler_id),
            COLUMN = 'scheduler_id';
    END IF;
    RETURN v_at;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_scheduler_heartbeat(uuid, text, text, numeric, double precision, boolean) IS
    'Scheduler liveness beat (upsert per process start; stopping => true on a clean stop); returns database time. Errors: TF400, TF409 (scheduler already stopped).';
REVOKE ALL ON FUNCTION taskforge.tf_scheduler_heartbeat(
    uuid, text, text, numeric, double precision, boolean
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_scheduler_heartbeat(
    uuid, text, text, numeric, double precision, boolean
) TO taskforge_scheduler;
