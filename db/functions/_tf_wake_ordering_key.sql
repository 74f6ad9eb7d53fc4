-- taskforge._tf_wake_ordering_key() -> trigger                         (private helper)
--
-- Purpose:    the wake-up of an ordering key's next task (docs/flow-control.md): when a task
--             with an ordering key ends (its finished_at is set: SUCCEEDED, FAILED or
--             CANCELLED, by whatever path), the key's next task may start, so if the key's
--             lowest unfinished task comes after it and is QUEUED and due, the same transaction
--             sends the usual wake-up of that task's queue, pg_notify('taskforge', queue),
--             delivered when it commits. Without it a worker whose claim came back short (the
--             next task of a key cannot be claimed in the call that finalizes its predecessor:
--             the claim picks first) waited for its poll interval, so ordering keys ran at a
--             few tasks a poll. A task of the key ending while an earlier one is unfinished,
--             or a next task that is BLOCKED, RETRYING or not due yet, sends nothing (the
--             release of its parents, tf_promote and the submit send their own).
-- Fires:      as the row trigger tasks_wake_ordering_key (db/schema/55_triggers.sql): AFTER
--             UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.ordering_key IS NOT NULL
--             AND NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL). Why a trigger: the
--             terminal states are written by taskforge._tf_turn, tf_recover, tf_cancel and the
--             dependency cascade; the table is on every such path. Tasks without an ordering
--             key pay the WHEN test and never call this.
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none of its own.
-- Locks:      none of its own; a NOTIFY serialises commits across the cluster (at commit), a
--             price paid by the transactions that end a task with an ordering key only.
-- Clock:      NEW.updated_at, the now of the statement that ended the task, for "due".
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_wake_ordering_key()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_next record;
BEGIN
    -- The key's head now (tasks_ordering_key_idx: an equality on the key).
    SELECT t.task_id, t.state, t.queue, t.scheduled_at INTO v_next
      FROM taskforge.tasks t
     WHERE t.ordering_key = NEW.ordering_key AND t.finished_at IS NULL
     ORDER BY t.task_id
     LIMIT 1;
    IF v_next.task_id > NEW.task_id AND v_next.state = 'QUEUED' AND v_next.scheduled_at <= NEW.updated_at THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[v_next.queue::text]);
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_wake_ordering_key() IS
    'Private: row trigger (tasks_wake_ordering_key) that wakes the queue of an ordering key''s next task when a task of the key ends.';
REVOKE ALL ON FUNCTION taskforge._tf_wake_ordering_key() FROM PUBLIC;
