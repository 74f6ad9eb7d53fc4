-- taskforge.tf_set_queue_aging(queue text, priority_per_second double precision)
--   -> double precision
--
-- Purpose:    set or clear a queue's priority aging (docs/flow-control.md, "Priority aging"):
--             a waiting task's effective priority is
--               priority + priority_per_second * (seconds since it was submitted)
--             in database time, and claims take the queue's due tasks by effective priority
--             (DESC), then created_at, task_id. Since every task of the queue ages at the same
--             rate, this is the order of created_at - priority / priority_per_second: a task
--             of priority p is claimed before every task of priority P > p submitted more than
--             (P - p) / priority_per_second seconds after it, so a sustained stream of higher
--             priorities delays it by at most that long plus the time to run what was
--             submitted before that instant. Off (NULL, the default) the order is
--             priority DESC, created_at, task_id. Across queues, claims that take from several
--             compare effective priorities (an unaged task's is its priority). Tasks with flow
--             keys (rate, concurrency, ordering) keep their keyed order within the keyed pick.
-- Parameters: queue                a queue name (it need not have tasks yet).
--             priority_per_second  0 < r <= 65535 priority points per second of waiting, or
--                                  NULL to turn aging off.
-- Returns:    the previous rate (NULL = it was off).
-- Errors:     TF400 queue NULL or malformed, priority_per_second out of range. Nothing written
--             on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_queue_aging(queue text, priority_per_second double precision)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_row taskforge.queues%ROWTYPE;
BEGIN
    IF tf_set_queue_aging.priority_per_second IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('priority_per_second', tf_set_queue_aging.priority_per_second, 0, 65535, true, 'priority points per second');
    END IF;
    v_row := taskforge._tf_lock_queue(tf_set_queue_aging.queue);
    UPDATE taskforge.queues q
       SET aging_per_second = tf_set_queue_aging.priority_per_second, updated_at = v_now
     WHERE q.queue = v_row.queue;
    RETURN v_row.aging_per_second;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) IS
    'Set (0 < r <= 65535 priority points per second of waiting) or clear (NULL) a queue''s priority aging; returns the previous rate. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_queue_aging(text, double precision) TO taskforge_client;
