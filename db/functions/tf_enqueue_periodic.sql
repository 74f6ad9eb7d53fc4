-- taskforge.tf_enqueue_periodic(max_tasks numeric DEFAULT 1000)
--   -> TABLE(enqueued int, names text[], ticks timestamptz[], task_ids bigint[],
--            next_fire_at timestamptz)
--
-- Purpose:    enqueue the due ticks of periodic schedules (tf_schedule_periodic); the scheduler
--             calls it on every pass and sleeps until next_fire_at.
--             For each schedule whose next_fire_at <= now (earliest first, at most max_tasks):
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
-- Parameters: max_tasks  a whole number 1..100000 (numeric, as in tf_recover), the most
--             schedules handled in one call; call again while enqueued = max_tasks.
-- Returns:    one row: enqueued = ticks handled; names, ticks and task_ids = one element per
--             tick, element-aligned, earliest tick first; next_fire_at = the earliest
--             next_fire_at of all schedules after the call (NULL without schedules; already
--             past when more than max_tasks were due or a due row was locked by another
--             caller).
-- Errors:     TF400 naming the argument.
-- Locks:      FOR UPDATE SKIP LOCKED on due periodic_schedules rows; inserts tasks.
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry.
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
    v_due text[];
    v_name text;
    s taskforge.periodic_schedules%ROWTYPE;
    v_tick timestamptz;
    v_key text;
    v_task_id bigint;
    v_created boolean;
    v_names text[] := '{}';
    v_ticks timestamptz[] := '{}';
    v_task_ids bigint[] := '{}';
    v_queues text[] := '{}';
    v_message text;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_enqueue_periodic.max_tasks, 1, 100000);

    SELECT coalesce(array_agg(d.name ORDER BY d.next_fire_at, d.name), '{}') INTO v_due
      FROM (SELECT p.name, p.next_fire_at
              FROM taskforge.periodic_schedules p
             WHERE p.next_fire_at <= v_now
             ORDER BY p.next_fire_at, p.name
             LIMIT tf_enqueue_periodic.max_tasks::int
               FOR UPDATE OF p SKIP LOCKED) d;

    FOREACH v_name IN ARRAY v_due LOOP
        SELECT * INTO s FROM taskforge.periodic_schedules p WHERE p.name = v_name;
        IF NOT FOUND OR s.next_fire_at > v_now THEN
            CONTINUE;  -- deleted or advanced by another caller before our lock (locked rows are re-read)
        END IF;
        v_tick := taskforge._tf_cron_latest(s.cron, s.next_fire_at, v_now, s.timezone);
        v_key := 'periodic:' || s.name || ':' || to_char(v_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
        BEGIN
            SELECT r.task_id, r.created INTO v_task_id, v_created
              FROM taskforge._tf_submit_one(s.task_type, s.payload, s.queue, s.priority, s.max_attempts,
                                            v_tick, v_key, v_now, '') r;
        EXCEPTION WHEN SQLSTATE 'TF409' THEN
            GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT;
            SELECT t.task_id INTO v_task_id FROM taskforge.tasks t WHERE t.idempotency_key = v_key;
            v_created := false;
            RAISE WARNING 'taskforge: periodic schedule % tick %: % (counted as this tick''s task)',
                quote_literal(s.name), v_tick, v_message;
        END;
        IF v_created THEN
            v_queues := v_queues || s.queue;
        END IF;

        UPDATE taskforge.periodic_schedules p
           SET last_fire_at = v_tick, last_task_id = v_task_id,
               next_fire_at = taskforge._tf_cron_next(s.cron, v_now, s.timezone), updated_at = v_now
         WHERE p.name = s.name;
        v_names := v_names || s.name;
        v_ticks := v_ticks || v_tick;
        v_task_ids := v_task_ids || v_task_id;
    END LOOP;

    PERFORM taskforge._tf_notify_queues(v_queues);

    RETURN QUERY
    SELECT cardinality(v_names), v_names, v_ticks, v_task_ids,
           (SELECT p.next_fire_at FROM taskforge.periodic_schedules p ORDER BY p.next_fire_at LIMIT 1);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_enqueue_periodic(numeric) IS
    'Scheduler: enqueue the due tick of each periodic schedule once (SKIP LOCKED + idempotency key periodic:<name>:<tick>; catch-up fires only the latest missed tick) and advance next_fire_at. Returns the ticks and the next one. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_enqueue_periodic(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_enqueue_periodic(numeric) TO taskforge_scheduler;
