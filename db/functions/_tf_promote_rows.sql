-- taskforge._tf_promote_rows(task_ids bigint[], now timestamptz)
--   -> TABLE(promoted int, queues text[])                                    (private helper)
--
-- Purpose:    the write of tf_promote for the given tasks, which the caller has locked (FOR
--             UPDATE) and found RETRYING and due: each becomes QUEUED (no attempt is created).
--             The state is tested again here, so a task no longer RETRYING is left alone. Each
--             task is read by primary key, whatever the statistics of the partial indexes say.
--             tf_promote calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             now       tf_promote's clock (updated_at).
-- Returns:    one row: promoted = tasks moved to QUEUED; queues = their queues (duplicates
--             possible; for NOTIFY).
-- Errors:     whatever the write raises (a CHECK, a trigger, ...): nothing is written then.
-- Locks:      the given tasks rows (already the caller's).
-- Plans:      SET plan_cache_mode = force_custom_plan (the ids are a parameter).
-- Clock:      the caller's now.
-- By hand:    no: call tf_promote, which locks and checks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_promote_rows(task_ids bigint[], now timestamptz)
RETURNS TABLE(promoted int, queues text[])
LANGUAGE plpgsql
ROWS 1
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS MATERIALIZED (
        -- Each given task by primary key (LIMIT 1 keeps the state test out of the lookup, so no
        -- plan walks tasks_retry_due_idx, which holds every RETRYING task), then the state test.
        SELECT t.task_id
          FROM unnest(_tf_promote_rows.task_ids) AS i(task_id)
         CROSS JOIN LATERAL (SELECT x.task_id, x.state FROM taskforge.tasks x
                              WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
         WHERE t.state = 'RETRYING'
    ), moved AS (
        -- Joined by task_id alone: the rows are the caller's (locked), tested above.
        UPDATE taskforge.tasks t
           SET state = 'QUEUED', updated_at = _tf_promote_rows.now
          FROM due d
         WHERE t.task_id = d.task_id
        RETURNING t.queue
    )
    SELECT count(*)::int, coalesce(array_agg(m.queue::text), '{}') FROM moved m;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_promote_rows(bigint[], timestamptz) IS
    'Private: tf_promote''s write for locked due RETRYING tasks (to QUEUED); returns the count and their queues.';
REVOKE ALL ON FUNCTION taskforge._tf_promote_rows(bigint[], timestamptz) FROM PUBLIC;
