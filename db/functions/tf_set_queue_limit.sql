-- taskforge.tf_set_queue_limit(queue text, max_running numeric) -> int
--
-- Purpose:    set or clear a queue's concurrency limit: at no instant are more than max_running
--             of the queue's tasks RUNNING, however many workers and claimers there are. Claims
--             of a limited queue are serialised on its taskforge.queues row (a claimer that finds
--             it locked skips the queue for that claim, it never waits); unlimited queues are not
--             affected. Lowering a limit below the current RUNNING count stops nothing: the
--             queue gets no new claims until it is under the limit again.
-- Parameters: queue        a queue name (it need not have tasks yet).
--             max_running  whole number 1..1000000, or NULL to remove the limit.
-- Returns:    the previous limit (NULL = it was unlimited).
-- Errors:     TF400 queue NULL or malformed, max_running out of range. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_queue_limit(queue text, max_running numeric)
RETURNS int
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
    IF tf_set_queue_limit.max_running NOT BETWEEN 1 AND 1000000
       OR tf_set_queue_limit.max_running <> trunc(tf_set_queue_limit.max_running) THEN
        PERFORM taskforge._tf_check_int('max_running', tf_set_queue_limit.max_running, 1, 1000000);
    END IF;
    v_row := taskforge._tf_lock_queue(tf_set_queue_limit.queue);
    UPDATE taskforge.queues q
       SET max_running = tf_set_queue_limit.max_running, updated_at = v_now
     WHERE q.queue = v_row.queue;
    IF v_row.max_running IS NOT NULL
       AND (tf_set_queue_limit.max_running IS NULL OR tf_set_queue_limit.max_running > v_row.max_running) THEN
        -- More room than before: wake idle workers of the queue.
        PERFORM taskforge._tf_notify_queues(ARRAY[v_row.queue]);
    END IF;
    RETURN v_row.max_running;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) IS
    'Set (1..1000000) or clear (NULL) the maximum number of RUNNING tasks of a queue; returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_queue_limit(text, numeric) TO taskforge_client;
