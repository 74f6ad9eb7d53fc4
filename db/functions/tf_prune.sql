-- taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000) -> int
--
-- Purpose:    retention. Delete terminal tasks (SUCCEEDED, FAILED, CANCELLED) that finished
--             more than older_than_seconds ago, oldest first, at most max_tasks per call; their
--             attempts go with them (ON DELETE CASCADE) and their idempotency keys become free.
--             Call repeatedly while it returns max_tasks (the scheduler does, with --retain-days).
--             A parent (depends_on) is kept while one of its children is not terminal, so the
--             child's handler can still read its result; the dependency edges of the deleted
--             tasks are deleted with them.
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
    v_ids bigint[];
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_tasks', tf_prune.max_tasks, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune.older_than_seconds);

    WITH victims AS (
        SELECT t.task_id
          FROM taskforge.tasks t
         WHERE t.finished_at < v_cutoff
           -- A parent stays while a child is not terminal (its handler may read the result).
           AND (NOT t.has_children
                OR NOT EXISTS (SELECT 1 FROM taskforge.task_dependencies d
                                 JOIN taskforge.tasks c ON c.task_id = d.child_task_id
                                WHERE d.parent_task_id = t.task_id AND c.finished_at IS NULL))
         ORDER BY t.finished_at
         LIMIT tf_prune.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    )
    , deleted AS (
        DELETE FROM taskforge.tasks t
         USING victims v
         WHERE t.task_id = v.task_id
           AND t.finished_at < v_cutoff
           AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
        RETURNING t.task_id
    )
    SELECT array_agg(d.task_id) INTO v_ids FROM deleted d;
    v_deleted := coalesce(cardinality(v_ids), 0);
    -- Their dependency edges, both ways (task_dependencies has no foreign keys: 20_tables.sql).
    IF v_deleted > 0 AND EXISTS (SELECT 1 FROM taskforge.task_dependencies LIMIT 1) THEN
        DELETE FROM taskforge.task_dependencies d
         WHERE d.child_task_id = ANY (v_ids) OR d.parent_task_id = ANY (v_ids);
    END IF;
    RETURN v_deleted;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune(double precision, numeric) IS
    'Retention: delete terminal tasks finished more than older_than_seconds ago (oldest first, at most max_tasks) with their attempts; frees their idempotency keys. Returns the count. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune(double precision, numeric) TO taskforge_scheduler;
