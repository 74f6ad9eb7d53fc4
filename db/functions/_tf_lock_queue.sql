-- taskforge._tf_lock_queue(queue text) -> taskforge.queues   (private helper)
--
-- Purpose:    the queue-control row of one queue, created when missing and locked, for
--             tf_pause_queue, tf_resume_queue and tf_set_queue_limit.
-- Parameters: queue  a queue name (taskforge._tf_name_pattern('queue'), the rule tf_submit applies).
-- Returns:    the taskforge.queues row, locked FOR UPDATE until the caller's transaction ends.
-- Errors:     TF400 queue NULL or malformed (nothing written).
-- Locks:      inserts the row if missing; the row FOR UPDATE (claimers of a limited queue take
--             the same lock with SKIP LOCKED, so they skip the queue while it is being changed).
-- Clock:      created_at and updated_at default to clock_timestamp().
-- By hand:    harmless (an empty row changes nothing).
CREATE OR REPLACE FUNCTION taskforge._tf_lock_queue(queue text)
RETURNS taskforge.queues
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_row taskforge.queues%ROWTYPE;
BEGIN
    PERFORM taskforge._tf_check_name('queue', _tf_lock_queue.queue, 'queue');
    INSERT INTO taskforge.queues AS q (queue) VALUES (_tf_lock_queue.queue) ON CONFLICT (queue) DO NOTHING;
    SELECT * INTO STRICT v_row FROM taskforge.queues q WHERE q.queue = _tf_lock_queue.queue FOR UPDATE;
    RETURN v_row;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_lock_queue(text) IS
    'Private: validates a queue name (TF400) and returns its taskforge.queues row, created if missing, locked FOR UPDATE.';
REVOKE ALL ON FUNCTION taskforge._tf_lock_queue(text) FROM PUBLIC;
