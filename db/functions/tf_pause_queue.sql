-- taskforge.tf_pause_queue(queue text) -> boolean
--
-- Purpose:    pause a queue: from the commit on, tf_claim and tf_finalize_and_claim take no task
--             of this queue. Everything else goes on: submits to it succeed (the tasks wait
--             QUEUED), running tasks keep their leases and finalize normally, retries are
--             promoted, recovery runs. A claim that started before the pause committed may
--             still take tasks of the queue.
-- Parameters: queue  a queue name (it need not have tasks yet: a queue can be paused ahead).
-- Returns:    true when the queue was running and is now paused; false when it was already
--             paused (nothing changed).
-- Errors:     TF400 queue NULL or malformed. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (paused_at).
-- By hand:    yes; undo with tf_resume_queue.
CREATE OR REPLACE FUNCTION taskforge.tf_pause_queue(queue text)
RETURNS boolean
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
    v_row := taskforge._tf_lock_queue(tf_pause_queue.queue);
    IF v_row.paused_at IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE taskforge.queues q SET paused_at = v_now, updated_at = v_now WHERE q.queue = v_row.queue;
    RETURN true;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_pause_queue(text) IS
    'Pause a queue: claims take none of its tasks until tf_resume_queue; submits still succeed. Returns true when the state changed. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_pause_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_pause_queue(text) TO taskforge_client;
