-- taskforge.tf_resume_queue(queue text) -> boolean
--
-- Purpose:    resume a paused queue: claims take its tasks again from the commit on, and idle
--             workers listening for the queue are woken (one NOTIFY on channel taskforge with the
--             queue name, sent at commit).
-- Parameters: queue  a queue name.
-- Returns:    true when the queue was paused and now runs; false when it was not paused
--             (nothing changed, nothing sent).
-- Errors:     TF400 queue NULL or malformed. Nothing written on error.
-- Locks:      the queue's taskforge.queues row (created if missing) FOR UPDATE.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_resume_queue(queue text)
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
    v_row := taskforge._tf_lock_queue(tf_resume_queue.queue);
    IF v_row.paused_at IS NULL THEN
        RETURN false;
    END IF;
    UPDATE taskforge.queues q SET paused_at = NULL, updated_at = v_now WHERE q.queue = v_row.queue;
    PERFORM taskforge._tf_notify_queues(ARRAY[v_row.queue]);
    RETURN true;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_resume_queue(text) IS
    'Resume a paused queue (claims take its tasks again; idle workers are notified). Returns true when the state changed. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_resume_queue(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_resume_queue(text) TO taskforge_client;
