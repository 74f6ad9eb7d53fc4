-- taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000) -> int
--
-- Purpose:    retention. Delete terminal tasks (SUCCEEDED, FAILED, CANCELLED) that finished
--             more than older_than_seconds ago, oldest first, at most max_tasks per call; their
--             attempts go with them (ON DELETE CASCADE) and their idempotency keys become free.
--             Call repeatedly while it returns max_tasks (the scheduler does, with --retain-days).
-- Parameters: older_than_seconds  0..3153600000 seconds (100 years).
--             max_tasks           whole number 1..100000.
-- Returns:    the number of tasks deleted.
-- Errors:     TF400 naming the argument.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen rows (a task being retried is skipped).
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() at entry.
-- By hand:    yes; what it deletes is gone (take a backup if you need the history).
CREATE OR REPLACE FUNCTION taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_deleted int;
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_tasks', tf_prune.max_tasks, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune.older_than_seconds);

    WITH victims AS (
        SELECT t.task_id
          FROM taskforge.tasks t
         WHERE t.finished_at < v_cutoff
         ORDER BY t.finished_at
         LIMIT tf_prune.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    )
    DELETE FROM taskforge.tasks t
     USING victims v
     WHERE t.task_id = v.task_id
       AND t.finished_at < v_cutoff
       AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune(double precision, numeric) IS
    'Retention: delete terminal tasks finished more than older_than_seconds ago (oldest first, at most max_tasks) with their attempts; frees their idempotency keys. Returns the count. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune(double precision, numeric) TO taskforge_scheduler;
