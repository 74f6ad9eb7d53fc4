-- taskforge.tf_schedule_periodic(name text, cron text, task_type text, payload jsonb DEFAULT '{}',
--     queue text DEFAULT 'default', priority numeric DEFAULT 0, max_attempts numeric DEFAULT 3,
--     timezone text DEFAULT 'UTC')
--   -> TABLE(next_fire_at timestamptz, created boolean)
--
-- Purpose:    create or replace a periodic schedule: at every tick of `cron`, read on the wall
--             clock of `timezone`, tf_enqueue_periodic (run by the scheduler) submits one task
--             with task_type, payload, queue, priority and max_attempts.
--             Replacing a schedule with the same cron and timezone keeps its next tick, so a
--             deploy that declares its schedules again neither skips nor repeats a tick; a new
--             cron or timezone starts from the first tick after now. Tasks already enqueued are
--             not touched.
-- Parameters: name          the schedule's key, taskforge._tf_name_pattern('schedule'):
--                           ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
--             cron          a standard 5-field expression, "minute hour day-of-month month
--                           day-of-week" (taskforge._tf_cron_parse: *, lists, ranges, steps,
--                           JAN-DEC, SUN-SAT, 0 and 7 = Sunday, the Vixie day rule, @daily...).
--             task_type .. max_attempts  the request, validated with exactly tf_submit's rules
--                           (taskforge._tf_submit_one); priority and max_attempts are numeric,
--                           as in tf_submit, so any number a caller writes gets TF400.
--             timezone      a name of pg_timezone_names, case as listed ('UTC', 'Europe/Berlin').
--                           DST: a repeated wall-clock time fires once, at its first
--                           occurrence; a skipped one fires when the clocks jump
--                           (taskforge._tf_cron_fire_at).
-- Returns:    one row: the next tick (the instant its task will be enqueued) and whether this
--             call created the schedule (false: it replaced one).
-- Errors:     TF400 naming the argument (nothing written); a bad cron names the cron field,
--             e.g. "cron: minute field '61': 61 is out of range 0-59".
-- Locks:      the schedule row (INSERT ... ON CONFLICT DO UPDATE; waits for a scheduler that
--             is enqueueing it).
-- Clock:      clock_timestamp() once at entry (the first tick is after it).
-- By hand:    yes; it is the public way to declare a periodic task.
CREATE OR REPLACE FUNCTION taskforge.tf_schedule_periodic(
    name text,
    cron text,
    task_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority numeric DEFAULT 0,
    max_attempts numeric DEFAULT 3,
    timezone text DEFAULT 'UTC')
RETURNS TABLE(next_fire_at timestamptz, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_next timestamptz;
    v_created boolean;
BEGIN
    PERFORM taskforge._tf_check_name('name', tf_schedule_periodic.name, 'schedule');
    PERFORM taskforge._tf_cron_parse(tf_schedule_periodic.cron);
    PERFORM taskforge._tf_submit_one(tf_schedule_periodic.task_type, tf_schedule_periodic.payload,
        tf_schedule_periodic.queue, tf_schedule_periodic.priority, tf_schedule_periodic.max_attempts,
        NULL, NULL, v_now, '', validate_only => true);
    IF tf_schedule_periodic.timezone IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names z WHERE z.name = tf_schedule_periodic.timezone) THEN
        PERFORM taskforge._tf_invalid('timezone', format('must be a time zone name of pg_timezone_names, such as '
            || '''UTC'' or ''Europe/Berlin'', got %s', coalesce(quote_literal(left(tf_schedule_periodic.timezone, 100)), 'NULL')));
    END IF;

    v_next := taskforge._tf_cron_next(tf_schedule_periodic.cron, v_now, tf_schedule_periodic.timezone);
    INSERT INTO taskforge.periodic_schedules AS s
           (name, cron, task_type, payload, queue, priority, max_attempts, timezone, next_fire_at,
            created_at, updated_at)
    VALUES (tf_schedule_periodic.name, tf_schedule_periodic.cron, tf_schedule_periodic.task_type,
            tf_schedule_periodic.payload, tf_schedule_periodic.queue, tf_schedule_periodic.priority,
            tf_schedule_periodic.max_attempts, tf_schedule_periodic.timezone, v_next, v_now, v_now)
    ON CONFLICT (name) DO UPDATE
       SET cron = EXCLUDED.cron, task_type = EXCLUDED.task_type, payload = EXCLUDED.payload,
           queue = EXCLUDED.queue, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
           timezone = EXCLUDED.timezone,
           -- Same cron and zone: keep the tick that is next (it may be due and not yet enqueued).
           next_fire_at = CASE WHEN s.cron = EXCLUDED.cron AND s.timezone = EXCLUDED.timezone
                               THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END,
           updated_at = EXCLUDED.updated_at
    RETURNING s.next_fire_at, s.created_at = v_now INTO v_next, v_created;

    RETURN QUERY SELECT v_next, v_created;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_schedule_periodic(text, text, text, jsonb, text, numeric, numeric, text) IS
    'Create or replace a periodic schedule: a 5-field cron in a time zone and the task tf_enqueue_periodic submits at each tick. Same cron and zone keep the next tick. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_schedule_periodic(
    text, text, text, jsonb, text, numeric, numeric, text
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_schedule_periodic(text, text, text, jsonb, text, numeric, numeric, text)
    TO taskforge_client;
