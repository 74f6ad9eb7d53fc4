-- taskforge.tf_enqueue_periodic(max_tasks numeric DEFAULT 1000)
--   -> TABLE(enqueued int, names text[], ticks timestamptz[], task_ids bigint[],
--            next_fire_at timestamptz)
--
-- Purpose:    enqueue the due ticks of periodic schedules (tf_schedule_periodic); the scheduler
--             calls it on every pass and sleeps until next_fire_at.
--             For each schedule whose next_fire_at <= now (earliest first, at most max_tasks;
--             taskforge._tf_enqueue_tick):
--               1. the tick to enqueue is the LATEST tick <= now (catch-up policy: ticks missed
--                  while no scheduler ran are not replayed one by one; the schedule fires once,
--                  for its most recent tick; taskforge._tf_cron_latest);
--               2. one task is submitted through tf_submit's own rules
--                  (taskforge._tf_submit_one) with scheduled_at = the tick and the idempotency
--                  key 'periodic:<name>:<tick in UTC, YYYY-MM-DDTHH:MI:SSZ>', so a tick can
--                  never create a second task, even if it is handled again;
--               3. last_fire_at, last_task_id and next_fire_at (the first tick after now) are
--                  written in the same transaction.
--             Exactly once with many schedulers: due rows are locked FOR UPDATE SKIP LOCKED, so
--             concurrent callers split the schedules and a tick is handled by one of them; a
--             row advanced by another caller no longer qualifies when it is locked; and the
--             key makes a repeated tick a replay of the same task.
--             A key already held by a different request (a task submitted by hand with a
--             'periodic:' key) counts as that tick's task: a WARNING is raised, the holder's
--             id is reported and the schedule moves on.
--             Bad rows: one schedule that cannot be enqueued never stops the others. The due
--             schedules are handled in one subtransaction (fast path); when it raises an error
--             about a row (taskforge._tf_maintenance_row_error: e.g. its request is refused by
--             tf_submit's rules now, a CHECK, a trigger; not a deadlock, a lock timeout, a
--             read-only server or a missing object, which fail the call as before), they are
--             handled again one by one, each in its own subtransaction; a schedule that fails is
--             recorded in maintenance_errors (tf_maintenance_errors, schedule_name; a WARNING
--             the first time the error is seen) and left out until its retry_after (60 s
--             doubling to 1 h), its next_fire_at unchanged: when it succeeds later, catch-up
--             enqueues its latest tick. Its entry is deleted once the schedule is no longer
--             due (enqueued at last, rescheduled or deleted).
-- Parameters: max_tasks  a whole number 1..100000 (numeric, as in tf_recover), the most
--             schedules handled in one call; call again while enqueued = max_tasks.
-- Returns:    one row: enqueued = ticks handled; names, ticks and task_ids = one element per
--             tick, element-aligned, earliest tick first; next_fire_at = the earliest
--             next_fire_at of all schedules after the call (NULL without schedules; already
--             past when more than max_tasks were due or a due row was locked by another
--             caller); a schedule skipped for a recorded error counts with its retry_after.
-- Errors:     TF400 naming the argument; errors that are not about a row fail the call.
-- Locks:      FOR UPDATE SKIP LOCKED on due periodic_schedules rows; inserts tasks; the
--             maintenance_errors entries it writes.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry (due test, ticks, retry_after).
-- By hand:    yes; it only does early what the scheduler would do.
CREATE OR REPLACE FUNCTION taskforge.tf_enqueue_periodic(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(enqueued int, names text[], ticks timestamptz[], task_ids bigint[], next_fire_at timestamptz)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_skip text[];
    v_has_errors boolean;
    v_due text[];
    v_name text;
    r record;
    v_names text[] := '{}';
    v_ticks timestamptz[] := '{}';
    v_task_ids bigint[] := '{}';
    v_queues text[] := '{}';
    v_sqlstate text;
    v_message text;
    v_retry timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_enqueue_periodic.max_tasks, 1, 100000);

    -- Schedules recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_enqueue_periodic';

    -- Locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(d.name ORDER BY d.next_fire_at, d.name), '{}') INTO v_due
      FROM (SELECT p.name, p.next_fire_at
              FROM taskforge.periodic_schedules p
             WHERE p.next_fire_at <= v_now AND p.name <> ALL (v_skip)
             ORDER BY p.next_fire_at, p.name
             LIMIT tf_enqueue_periodic.max_tasks::int
               FOR UPDATE OF p SKIP LOCKED) d;

    IF cardinality(v_due) > 0 THEN
        BEGIN
            FOREACH v_name IN ARRAY v_due LOOP
                SELECT * INTO r FROM taskforge._tf_enqueue_tick(v_name, v_now);
                CONTINUE WHEN NOT FOUND;
                v_names := v_names || v_name;
                v_ticks := v_ticks || r.tick;
                v_task_ids := v_task_ids || r.task_id;
                IF r.created THEN
                    v_queues := v_queues || r.queue;
                END IF;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad schedule: all of them again, one by one, each in a subtransaction of its own
            -- (the variables are not rolled back with the subtransaction: start them afresh).
            v_names := '{}';
            v_ticks := '{}';
            v_task_ids := '{}';
            v_queues := '{}';
            FOREACH v_name IN ARRAY v_due LOOP
                BEGIN
                    SELECT * INTO r FROM taskforge._tf_enqueue_tick(v_name, v_now);
                    CONTINUE WHEN NOT FOUND;
                    v_names := v_names || v_name;
                    v_ticks := v_ticks || r.tick;
                    v_task_ids := v_task_ids || r.task_id;
                    IF r.created THEN
                        v_queues := v_queues || r.queue;
                    END IF;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_enqueue_periodic', v_name, v_sqlstate, v_message,
                                                             v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    PERFORM taskforge._tf_notify_queues(v_queues);

    IF v_has_errors THEN
        -- Entries of schedules that are not due any more (enqueued now, rescheduled, deleted).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_enqueue_periodic'
           AND NOT EXISTS (SELECT 1 FROM taskforge.periodic_schedules p
                            WHERE p.name = e.subject AND p.next_fire_at <= v_now);
        SELECT coalesce(array_agg(e.subject) FILTER (WHERE e.retry_after > v_now), '{}'),
               min(e.retry_after) FILTER (WHERE e.retry_after > v_now)
          INTO v_skip, v_retry
          FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_enqueue_periodic';
    END IF;

    RETURN QUERY
    SELECT cardinality(v_names), v_names, v_ticks, v_task_ids,
           least((SELECT p.next_fire_at FROM taskforge.periodic_schedules p
                   WHERE p.name <> ALL (v_skip) ORDER BY p.next_fire_at LIMIT 1), v_retry);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_enqueue_periodic(numeric) IS
    'Scheduler: enqueue the due tick of each periodic schedule once (SKIP LOCKED + idempotency key periodic:<name>:<tick>; catch-up fires only the latest missed tick) and advance next_fire_at. A schedule that fails to enqueue is skipped and recorded (tf_maintenance_errors), the others are enqueued. Returns the ticks and the next one. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_enqueue_periodic(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_enqueue_periodic(numeric) TO taskforge_scheduler;
