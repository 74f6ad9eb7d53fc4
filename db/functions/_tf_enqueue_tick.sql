-- taskforge._tf_enqueue_tick(name text, now timestamptz)
--   -> TABLE(tick timestamptz, task_id bigint, queue text, created boolean)  (private helper)
--
-- Purpose:    tf_enqueue_periodic's work for one due schedule the caller has locked (FOR
--             UPDATE): the tick to enqueue is the latest tick <= now (taskforge._tf_cron_latest);
--             one task is submitted through tf_submit's rules (taskforge._tf_submit_one) with
--             scheduled_at = the tick and the idempotency key
--             'periodic:<name>:<tick in UTC, YYYY-MM-DDTHH:MI:SSZ>'; last_fire_at, last_task_id
--             and next_fire_at (the first tick after now) are written.
--             A key already held by a different request (TF409: a task submitted by hand with a
--             'periodic:' key) counts as that tick's task: a WARNING is raised, the holder's id
--             is returned (created = false) and the schedule moves on.
-- Parameters: name  the schedule (locked by the caller).
--             now   tf_enqueue_periodic's clock.
-- Returns:    one row (tick, task_id, queue, created), or none when the schedule was deleted or
--             is no longer due (advanced by another caller before the lock).
-- Errors:     whatever the submit or the update raises besides TF409 (a request tf_submit
--             refuses now, a CHECK, a trigger): nothing is written then.
-- Locks:      the schedule's row (already the caller's); inserts tasks.
-- Clock:      the caller's now.
-- By hand:    no: call tf_enqueue_periodic, which locks the due rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_enqueue_tick(name text, now timestamptz)
RETURNS TABLE(tick timestamptz, task_id bigint, queue text, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_enqueue_tick.now;
    s taskforge.periodic_schedules%ROWTYPE;
    v_tick timestamptz;
    v_key text;
    v_task_id bigint;
    v_created boolean;
    v_message text;
BEGIN
    SELECT * INTO s FROM taskforge.periodic_schedules p WHERE p.name = _tf_enqueue_tick.name;
    IF NOT FOUND OR s.next_fire_at > v_now THEN
        RETURN;  -- deleted or advanced by another caller before our lock (locked rows are re-read)
    END IF;
    v_tick := taskforge._tf_cron_latest(s.cron, s.next_fire_at, v_now, s.timezone);
    v_key := 'periodic:' || s.name || ':' || to_char(v_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
    BEGIN
        SELECT r.task_id, r.created INTO v_task_id, v_created
          FROM taskforge._tf_submit_one(s.task_type, s.payload, s.queue, s.priority, s.max_attempts,
                                        v_tick, v_key, v_now, '') r;
    EXCEPTION WHEN SQLSTATE 'TF409' THEN
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT;
        SELECT k.task_id INTO v_task_id FROM taskforge.idempotency_keys k WHERE k.idempotency_key = v_key;
        v_created := false;
        RAISE WARNING 'taskforge: periodic schedule % tick %: % (counted as this tick''s task)',
            quote_literal(s.name), v_tick, v_message;
    END;

    UPDATE taskforge.periodic_schedules p
       SET last_fire_at = v_tick, last_task_id = v_task_id,
           next_fire_at = taskforge._tf_cron_next(s.cron, v_now, s.timezone), updated_at = v_now
     WHERE p.name = s.name;
    RETURN QUERY SELECT v_tick, v_task_id, s.queue::text, v_created;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_enqueue_tick(text, timestamptz) IS
    'Private: enqueue the latest due tick of one locked periodic schedule (key periodic:<name>:<tick>; TF409 counts the holder) and advance next_fire_at. Returns tick, task_id, queue, created; no row if not due.';
REVOKE ALL ON FUNCTION taskforge._tf_enqueue_tick(text, timestamptz) FROM PUBLIC;
