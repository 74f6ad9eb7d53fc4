-- taskforge.tf_promote(max_tasks numeric DEFAULT 1000) -> TABLE(promoted int, next_due_at timestamptz)
--
-- Purpose:    move RETRYING tasks whose backoff has ended (scheduled_at <= now) back to QUEUED,
--             earliest first. Promotion creates no attempt: the next claim creates attempt N+1.
-- Parameters: max_tasks  whole number 1..100000, the batch size; call again while a full batch comes back.
-- Returns:    one row: promoted = tasks moved to QUEUED; next_due_at = earliest scheduled_at
--             of the RETRYING tasks left, or NULL (a scheduler can sleep until then).
-- Errors:     TF400 naming the argument.
-- Locks:      FOR UPDATE SKIP LOCKED on due RETRYING rows (several schedulers split the work).
-- Notify:     pg_notify('taskforge', queue) once per queue that received a task (on commit).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() once at entry.
-- By hand:    yes; it only does early what the scheduler would do.
CREATE OR REPLACE FUNCTION taskforge.tf_promote(max_tasks numeric DEFAULT 1000)
RETURNS TABLE(promoted int, next_due_at timestamptz)
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
    v_promoted int;
    v_queues text[];
    v_next timestamptz;
BEGIN
    PERFORM taskforge._tf_check_int('max_tasks', tf_promote.max_tasks, 1, 100000);

    WITH due AS (
        SELECT t.task_id
          FROM taskforge.tasks t
         WHERE t.state = 'RETRYING' AND t.scheduled_at <= v_now
         ORDER BY t.scheduled_at
         LIMIT tf_promote.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    ), moved AS (
        UPDATE taskforge.tasks t
           SET state = 'QUEUED', updated_at = v_now
          FROM due d
         WHERE t.task_id = d.task_id AND t.state = 'RETRYING'
        RETURNING t.queue
    )
    SELECT count(*), array_agg(DISTINCT m.queue) INTO v_promoted, v_queues FROM moved m;

    PERFORM taskforge._tf_notify_queues(v_queues);

    SELECT t.scheduled_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.state = 'RETRYING'
     ORDER BY t.scheduled_at
     LIMIT 1;

    RETURN QUERY SELECT v_promoted, v_next;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_promote(numeric) IS
    'Move RETRYING tasks whose backoff ended to QUEUED (SKIP LOCKED; no attempt is created). Returns count and next_due_at. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_promote(numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_promote(numeric) TO taskforge_scheduler;
