-- taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz) -> int     (private helper)
--
-- Purpose:    the deletes of tf_prune for the given tasks, which the caller has locked (FOR
--             UPDATE) and chosen: each task (read by primary key) still terminal and finished
--             before cutoff is deleted, its attempts with it (ON DELETE CASCADE), then the
--             dependency edges of the deleted tasks, both ways (task_dependencies has no foreign
--             keys: 20_tables.sql).
--             tf_prune calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             cutoff    tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks deleted.
-- Errors:     whatever a delete raises (a trigger, a foreign key, ...): nothing is deleted then.
-- Locks:      the given tasks rows (already the caller's), their attempts and edges.
-- Plans:      SET plan_cache_mode = force_custom_plan (the ids are a parameter).
-- Clock:      none (the caller's cutoff).
-- By hand:    no: call tf_prune, which chooses and locks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    WITH victims AS MATERIALIZED (
        -- Each given task by primary key (LIMIT 1 keeps the tests out of the lookup, so no plan
        -- walks tasks_finished_idx, which holds all finished history), then the tests.
        SELECT t.task_id
          FROM unnest(_tf_prune_rows.task_ids) AS i(task_id)
         CROSS JOIN LATERAL (SELECT x.task_id, x.state, x.finished_at FROM taskforge.tasks x
                              WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
         WHERE t.finished_at < _tf_prune_rows.cutoff AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
    ), deleted AS (
        -- Joined by task_id alone: the rows are the caller's (locked), tested above.
        DELETE FROM taskforge.tasks t
         USING victims v
         WHERE t.task_id = v.task_id
        RETURNING t.task_id
    )
    SELECT array_agg(d.task_id) INTO v_ids FROM deleted d;
    IF v_ids IS NOT NULL AND EXISTS (SELECT 1 FROM taskforge.task_dependencies LIMIT 1) THEN
        DELETE FROM taskforge.task_dependencies d
         WHERE d.child_task_id = ANY (v_ids) OR d.parent_task_id = ANY (v_ids);
    END IF;
    RETURN coalesce(cardinality(v_ids), 0);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) IS
    'Private: tf_prune''s deletes for locked chosen tasks (still terminal, finished before cutoff), with their attempts and dependency edges; returns the count.';
REVOKE ALL ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) FROM PUBLIC;
