-- taskforge._tf_notify_finished() -> trigger                            (private helper)
--
-- Purpose:    the one home of the finished notification (tf_submit's notify_finished): when a
--             task submitted with notify_finished = true reaches a terminal state (SUCCEEDED,
--             FAILED or CANCELLED), whatever wrote it (tf_finalize, tf_finalize_many,
--             tf_finalize_and_claim: taskforge._tf_turn; tf_recover, an expired lease or a
--             passed deadline; tf_cancel of a QUEUED or RETRYING task; a cancel honoured at
--             finalize or recovery), the same transaction sends
--               pg_notify('taskforge_finished', task_id::text)
--             delivered when it commits, dropped when it rolls back. The channel and payload
--             are part of the API: a waiter LISTENs taskforge_finished first, then reads the task
--             (docs/sql-api.md#waiting-for-a-result).
-- Fires:      as the row trigger tasks_notify_finished (db/schema/55_triggers.sql): AFTER UPDATE
--             OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.notify_finished). Why a trigger:
--             three functions write terminal states (taskforge._tf_turn, tf_recover and
--             tf_cancel); no function is on every such path, the table is. Tasks without the flag
--             cost the WHEN test of one boolean column per updated row and never call this
--             function. Only a change into a terminal state notifies (a flagged task's claim or
--             retry does not; a task redriven by tf_retry notifies again when it ends again).
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none.
-- Locks:      none of its own; a NOTIFY serialises commits across the cluster (at commit), the
--             price of the flag, paid by the transactions that end a flagged task only.
-- Clock:      none.
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_notify_finished()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF NEW.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND OLD.state IS DISTINCT FROM NEW.state THEN
        PERFORM pg_notify('taskforge_finished', NEW.task_id::text);
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_notify_finished() IS
    'Private trigger function: NOTIFY taskforge_finished(task_id) when a task submitted with notify_finished reaches SUCCEEDED, FAILED or CANCELLED (delivered on commit).';
REVOKE ALL ON FUNCTION taskforge._tf_notify_finished() FROM PUBLIC;
