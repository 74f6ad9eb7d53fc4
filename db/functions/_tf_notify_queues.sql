-- taskforge._tf_notify_queues(queues text[]) -> void                  (private helper)
--
-- Purpose:    wake idle workers: one pg_notify('taskforge', queue) per distinct queue that just
--             received work. The channel and payload are part of the API (workers LISTEN
--             taskforge; the payload is the queue name). Notifications are delivered when the
--             caller's transaction commits and dropped if it rolls back.
-- Parameters: queues  text[] of queue names, or NULL (nothing to send).
-- Returns:    nothing.  Errors: none.  Locks: none (NOTIFY serialises commits cluster-wide,
--             which is why claim and finalize never call it).  Clock: none.
-- By hand:    harmless (workers wake and find nothing new).
CREATE OR REPLACE FUNCTION taskforge._tf_notify_queues(queues text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_queue text;
BEGIN
    FOR v_queue IN SELECT DISTINCT q FROM unnest(queues) AS q WHERE q IS NOT NULL LOOP
        PERFORM pg_notify('taskforge', v_queue);
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_notify_queues(text[]) IS
    'Private: NOTIFY taskforge once per distinct queue name (delivered on commit).';
REVOKE ALL ON FUNCTION taskforge._tf_notify_queues(text[]) FROM PUBLIC;
