-- taskforge.tf_set_concurrency_limit(concurrency_key text, max_running numeric) -> int
--
-- Purpose:    set or clear the limit of a concurrency key (tf_submit's concurrency_key): at no
--             instant are more than max_running of the key's tasks RUNNING, however many
--             claimers run. Claims of a key are serialised on its taskforge.concurrency_keys row
--             (a claimer that finds it locked skips the key for that claim, it never waits), and
--             count the key's RUNNING tasks under that lock, as for a queue limit
--             (tf_set_queue_limit). Lowering a limit below the RUNNING count stops nothing: the
--             key gets no new claims until it is under the limit again. Every concurrency key
--             takes part in fair claiming whether it has a limit or not (docs/flow-control.md).
-- Parameters: concurrency_key  1..200 characters (it need not have tasks yet).
--             max_running      whole number 1..1000000, or NULL to remove the limit.
-- Returns:    the previous limit (NULL = it was unlimited).
-- Errors:     TF400 naming the argument. Nothing written on error.
-- Locks:      the key's taskforge.concurrency_keys row (created if missing) FOR UPDATE.
-- Notify:     pg_notify('taskforge', queue) for each queue with QUEUED tasks of the key when the
--             limit is raised or removed.
-- Clock:      clock_timestamp() at entry (updated_at).
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_concurrency_limit(concurrency_key text, max_running numeric)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_old int;
    v_queues text[];
BEGIN
    PERFORM taskforge._tf_check_flow_key('concurrency_key', tf_set_concurrency_limit.concurrency_key, nullable => false);
    IF tf_set_concurrency_limit.max_running IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('max_running', tf_set_concurrency_limit.max_running, 1, 1000000);
    END IF;
    INSERT INTO taskforge.concurrency_keys AS k (concurrency_key, created_at, updated_at)
    VALUES (tf_set_concurrency_limit.concurrency_key, v_now, v_now)
    ON CONFLICT (concurrency_key) DO NOTHING;
    SELECT k.max_running INTO v_old FROM taskforge.concurrency_keys k
     WHERE k.concurrency_key = tf_set_concurrency_limit.concurrency_key FOR UPDATE;
    UPDATE taskforge.concurrency_keys k
       SET max_running = tf_set_concurrency_limit.max_running, updated_at = v_now
     WHERE k.concurrency_key = tf_set_concurrency_limit.concurrency_key;
    IF v_old IS NOT NULL AND (tf_set_concurrency_limit.max_running IS NULL OR tf_set_concurrency_limit.max_running > v_old) THEN
        SELECT array_agg(DISTINCT t.queue) INTO v_queues FROM taskforge.tasks t
         WHERE t.state = 'QUEUED' AND t.concurrency_key = tf_set_concurrency_limit.concurrency_key;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    END IF;
    RETURN v_old;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) IS
    'Set (1..1000000) or clear (NULL) the maximum number of RUNNING tasks of a concurrency key; returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_concurrency_limit(text, numeric) TO taskforge_client;
