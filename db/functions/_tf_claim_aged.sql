-- taskforge._tf_claim_aged(queue text, priority_per_second double precision, task_types text[],
--     max_tasks int, now timestamptz) -> bigint[]                        (private helper)
--
-- Purpose:    the pick of one queue with priority aging (tf_set_queue_aging): up to max_tasks of
--             its due QUEUED plain tasks (no flow key; in task_types when given) in the order
--             effective priority DESC (taskforge._tf_claim_order), created_at, task_id, locked
--             FOR UPDATE SKIP LOCKED. Within one priority the order is created_at, so the best
--             max_tasks are among the first max_tasks of each priority present: a loose scan of
--             tasks_claim_queue_idx finds the priorities (one index descent each), each gives
--             its first max_tasks due tasks, and the best of those are locked in order.
-- Parameters: queue, priority_per_second  the queue and its aging rate (priority points per
--                                         second since submission).
--             task_types, max_tasks, now  as taskforge._tf_claim_pick's.
-- Returns:    the ids locked, in claim order (at most max_tasks; fewer when others hold rows).
-- Errors:     none.  Locks: FOR UPDATE SKIP LOCKED on the ids returned.
-- Plans:      planned per call (aging is opt-in): cost follows the number of distinct
--             priorities waiting in the queue times max_tasks.
-- Clock:      now (the caller's): the due test and each task's wait.
-- By hand:    no; call tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_aged(
    queue text,
    priority_per_second double precision,
    task_types text[],
    max_tasks int,
    now timestamptz)
RETURNS bigint[]
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET enable_sort = on
AS $fn$
    WITH RECURSIVE levels AS (
        (SELECT t.priority FROM taskforge.tasks t
          WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
          ORDER BY t.priority DESC LIMIT 1)
        UNION ALL
        SELECT n.priority
          FROM levels l
         CROSS JOIN LATERAL (SELECT t.priority FROM taskforge.tasks t
                              WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
                                AND t.priority < l.priority
                              ORDER BY t.priority DESC LIMIT 1) n
    ), candidates AS (
        SELECT c.task_id
          FROM levels l
         CROSS JOIN LATERAL (SELECT t.task_id FROM taskforge.tasks t
                              WHERE t.state = 'QUEUED' AND NOT t.keyed AND t.queue = _tf_claim_aged.queue
                                AND t.priority = l.priority AND t.scheduled_at <= _tf_claim_aged.now
                                AND t.attempt_count < t.max_attempts
                                AND (_tf_claim_aged.task_types IS NULL OR t.task_type = ANY (_tf_claim_aged.task_types))
                              ORDER BY t.created_at, t.task_id
                              LIMIT _tf_claim_aged.max_tasks) c
    ), locked AS (
        SELECT t.task_id, t.priority, t.created_at
          FROM taskforge.tasks t
         WHERE t.task_id IN (SELECT c.task_id FROM candidates c) AND t.state = 'QUEUED'
         ORDER BY t.priority + _tf_claim_aged.priority_per_second
                      * greatest(0, extract(epoch FROM _tf_claim_aged.now - t.created_at)::double precision) DESC,
                  t.created_at, t.task_id
         LIMIT _tf_claim_aged.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    )
    SELECT coalesce(array_agg(l.task_id ORDER BY l.priority + _tf_claim_aged.priority_per_second
                                  * greatest(0, extract(epoch FROM _tf_claim_aged.now - l.created_at)::double precision) DESC,
                              l.created_at, l.task_id), '{}')
      FROM locked l;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_aged(text, double precision, text[], int, timestamptz) IS
    'Private: the claim''s pick of one queue with priority aging (effective priority DESC, created_at, task_id; SKIP LOCKED); returns the locked ids in claim order.';
REVOKE ALL ON FUNCTION taskforge._tf_claim_aged(text, double precision, text[], int, timestamptz) FROM PUBLIC;
