-- CALL taskforge.tf_maintain(run_seconds double precision DEFAULT 0,
--     interval_seconds double precision DEFAULT 1, retain_days double precision DEFAULT NULL,
--     max_tasks numeric DEFAULT 1000, INOUT recovered bigint DEFAULT NULL,
--     INOUT promoted bigint DEFAULT NULL, INOUT enqueued bigint DEFAULT NULL,
--     INOUT pruned bigint DEFAULT NULL)
--
-- Purpose:    the scheduler's work without a Python process, for pg_cron (or any job runner that
--             can CALL): passes of tf_make_partitions, tf_recover, tf_promote and
--             tf_enqueue_periodic (each repeated
--             while it returns a full batch) and, with retain_days, one round of tf_prune and
--             tf_prune_workers per minute, each pass in short transactions of its own (COMMIT
--             after every batch), so no snapshot or lock is held across passes. It keeps passing
--             every interval_seconds until run_seconds have gone by (0: one pass): pg_cron runs
--             at most once a minute, so `CALL taskforge.tf_maintain(run_seconds => 55)` every
--             minute recovers an expired lease within about interval_seconds (at most 60 -
--             run_seconds + interval_seconds at a run's end). Each pass also beats in
--             tf_schedulers as the scheduler named 'tf_maintain' (one fixed scheduler_id per
--             database, heartbeat_seconds 60), so `taskforge healthcheck` and the console see it.
--             On a hot standby it does nothing and returns zeros (pg_cron runs nothing there
--             either). Several calls at once are safe: every sweep claims its rows SKIP LOCKED.
-- Parameters: run_seconds       0..3600 seconds.
--             interval_seconds  0.01..3600 seconds between passes.
--             retain_days       NULL (keep all history) or 0..36500 days: prune terminal tasks
--                               (and the records of processes gone as long) finished longer ago.
--             max_tasks         whole number 1..100000, the batch size of every sweep.
--             recovered, promoted, enqueued, pruned: leave NULL; they come back as the totals
--                               of this call (recovered counts requeued and ended tasks).
-- Returns:    one row (recovered, promoted, enqueued, pruned), the totals of this call.
-- Errors:     TF400 naming the argument (nothing written). 2D000 (invalid transaction
--             termination) when called inside a transaction block or from a function: CALL it
--             on its own, as pg_cron does. An error of a sweep ends the call after the batches
--             already committed (the sweeps isolate a bad row themselves).
-- Locks:      those of the functions it calls; none across passes.
-- Security:   SECURITY INVOKER (a procedure that commits cannot be SECURITY DEFINER): the caller
--             needs taskforge_scheduler, which EXECUTE is granted to, as for the functions it calls.
-- Clock:      clock_timestamp() for run_seconds, the prune interval and the sleeps (pg_sleep; a
--             sleep holds a snapshot for at most interval_seconds, and xmin moves on each pass).
-- By hand:    yes; `CALL taskforge.tf_maintain();` is one scheduler pass.
CREATE OR REPLACE PROCEDURE taskforge.tf_maintain(
    run_seconds double precision DEFAULT 0,
    interval_seconds double precision DEFAULT 1,
    retain_days double precision DEFAULT NULL,
    max_tasks numeric DEFAULT 1000,
    INOUT recovered bigint DEFAULT NULL,
    INOUT promoted bigint DEFAULT NULL,
    INOUT enqueued bigint DEFAULT NULL,
    INOUT pruned bigint DEFAULT NULL)
LANGUAGE plpgsql
AS $fn$
DECLARE
    -- One scheduler identity per database, so tf_schedulers shows one 'tf_maintain' row.
    v_id uuid := pg_catalog.md5('taskforge.tf_maintain ' || pg_catalog.current_database())::uuid;
    v_end timestamptz;
    v_next_prune timestamptz;
    v_batch int;
    v_n int;
    v_m int;
    v_left double precision;
    v_arg text;
    v_value double precision;
    v_low double precision;
    v_high double precision;
    v_unit text;
BEGIN
    recovered := 0;
    promoted := 0;
    enqueued := 0;
    pruned := 0;
    -- The checks of _tf_check_seconds / _tf_check_int, written out: a SECURITY INVOKER routine
    -- may not call the private helpers (no TaskForge role may execute them).
    FOR v_arg, v_value, v_low, v_high, v_unit IN
        SELECT a.*
          FROM (VALUES ('run_seconds', tf_maintain.run_seconds, 0::float8, 3600::float8, 'seconds'),
                       ('interval_seconds', tf_maintain.interval_seconds, 0.01, 3600, 'seconds'),
                       ('retain_days', coalesce(tf_maintain.retain_days, 0), 0, 36500, 'days'),
                       ('max_tasks', tf_maintain.max_tasks::float8, 1, 100000, 'tasks')) AS a
    LOOP
        IF v_value IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg, MESSAGE = v_arg || ': must not be NULL';
        END IF;
        -- NaN sorts above every number and Infinity above the bounds: both fail the range test.
        IF v_arg = 'max_tasks' AND (v_value < v_low OR v_value > v_high OR tf_maintain.max_tasks % 1 <> 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg,
                MESSAGE = pg_catalog.format('max_tasks: must be a whole number between 1 and 100000, got %s',
                                            tf_maintain.max_tasks);
        ELSIF v_value < v_low OR v_value > v_high THEN
            RAISE EXCEPTION USING ERRCODE = 'TF400', COLUMN = v_arg,
                MESSAGE = pg_catalog.format('%s: must be at least %s and at most %s %s, got %s',
                                            v_arg, v_low, v_high, v_unit, v_value);
        END IF;
    END LOOP;
    v_batch := tf_maintain.max_tasks::int;
    IF pg_catalog.pg_is_in_recovery() THEN
        RETURN;
    END IF;
    v_end := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => tf_maintain.run_seconds);
    v_next_prune := pg_catalog.clock_timestamp();
    LOOP
        PERFORM taskforge.tf_scheduler_heartbeat(
            scheduler_id => v_id, name => 'tf_maintain', pid => pg_catalog.pg_backend_pid(),
            heartbeat_seconds => 60);
        COMMIT;
        PERFORM taskforge.tf_make_partitions();  -- the partitioned history's ranges ahead (else nothing)
        COMMIT;
        LOOP
            SELECT r.recovered + r.failed INTO v_n FROM taskforge.tf_recover(max_tasks => v_batch) AS r;
            COMMIT;
            recovered := recovered + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        LOOP
            SELECT p.promoted INTO v_n FROM taskforge.tf_promote(max_tasks => v_batch) AS p;
            COMMIT;
            promoted := promoted + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        LOOP
            SELECT e.enqueued INTO v_n FROM taskforge.tf_enqueue_periodic(max_tasks => v_batch) AS e;
            COMMIT;
            enqueued := enqueued + v_n;
            EXIT WHEN v_n < v_batch;
        END LOOP;
        IF tf_maintain.retain_days IS NOT NULL AND pg_catalog.clock_timestamp() >= v_next_prune THEN
            LOOP
                v_n := taskforge.tf_prune(older_than_seconds => tf_maintain.retain_days * 86400, max_tasks => v_batch);
                COMMIT;
                pruned := pruned + v_n;
                EXIT WHEN v_n < v_batch;
            END LOOP;
            LOOP
                SELECT w.workers + w.schedulers INTO v_m
                  FROM taskforge.tf_prune_workers(older_than_seconds => tf_maintain.retain_days * 86400,
                                                  max_rows => v_batch) AS w;
                COMMIT;
                EXIT WHEN v_m < v_batch;
            END LOOP;
            v_next_prune := pg_catalog.clock_timestamp() + interval '60 seconds';
        END IF;
        v_left := extract(EPOCH FROM v_end - pg_catalog.clock_timestamp());
        EXIT WHEN v_left <= 0;
        PERFORM pg_catalog.pg_sleep(least(tf_maintain.interval_seconds, v_left));
        COMMIT;
    END LOOP;
END;
$fn$;

COMMENT ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint) IS
    'The scheduler''s passes (tf_recover, tf_promote, tf_enqueue_periodic; tf_prune and tf_prune_workers each minute with retain_days) in short committed transactions, every interval_seconds for run_seconds; beats in tf_schedulers as tf_maintain; nothing on a standby. For pg_cron: CALL taskforge.tf_maintain(run_seconds => 55) every minute. Errors: TF400; 2D000 inside a transaction block.';
REVOKE ALL ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE taskforge.tf_maintain(
    double precision, double precision, double precision, numeric, bigint, bigint, bigint, bigint)
    TO taskforge_scheduler;
