-- taskforge._tf_claim_order(task_ids bigint[], max_tasks int, now timestamptz) -> bigint[]
--                                                                        (private helper)
--
-- Purpose:    the claim order, in one home: the first max_tasks of task_ids (tasks the claim
--             has locked) by effective priority DESC, created_at, task_id, where a task's
--             effective priority is its priority, plus, in a queue with priority aging
--             (tf_set_queue_aging), aging_per_second * the seconds since it was submitted
--             (database time, now). Without aging this is priority DESC, created_at, task_id,
--             the order of tasks_claim_order_idx. Used by taskforge._tf_claim_pick to merge
--             the picks of several paths (plain, limited and aged queues, keyed tasks).
-- Parameters: task_ids   locked task ids (any order; duplicates count once).
--             max_tasks  how many to keep (0..1000).
--             now        the claim's clock.
-- Returns:    the kept ids in claim order. The others stay locked by the caller's transaction,
--             unchanged, until it ends.
-- Errors:     none.  Locks: none.
-- Clock:      now (the caller's).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_order(task_ids bigint[], max_tasks int, now timestamptz)
RETURNS bigint[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
SET enable_sort = on
AS $fn$
    SELECT coalesce(array_agg(o.task_id ORDER BY o.rank), '{}')
      FROM (SELECT t.task_id,
                   row_number() OVER (ORDER BY t.priority + coalesce(q.aging_per_second, 0)
                                          * greatest(0, extract(epoch FROM _tf_claim_order.now - t.created_at)::double precision) DESC,
                                      t.created_at, t.task_id) AS rank
              FROM taskforge.tasks t
              LEFT JOIN taskforge.queues q ON q.queue = t.queue AND q.aging_per_second IS NOT NULL
             WHERE t.task_id = ANY (_tf_claim_order.task_ids)) AS o
     WHERE o.rank <= _tf_claim_order.max_tasks;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_order(bigint[], int, timestamptz) IS
    'Private: the first max_tasks of the given tasks in claim order (effective priority DESC with queue aging, created_at, task_id).';
REVOKE ALL ON FUNCTION taskforge._tf_claim_order(bigint[], int, timestamptz) FROM PUBLIC;
