-- taskforge._tf_release_children() -> trigger                          (private helper)
--
-- Purpose:    the one home of the dependency rules (tf_submit's depends_on, docs/workflows.md):
--             when a task that has children (tasks.has_children) changes state, its children
--             follow, in the same transaction:
--               -> SUCCEEDED         each BLOCKED child counts one unfinished parent fewer
--                                    (parents_pending); the child whose count reaches 0 becomes
--                                    QUEUED, due at its own scheduled_at, and its queue gets the
--                                    usual wake-up (pg_notify('taskforge', queue)) when it is due.
--               -> FAILED, CANCELLED every BLOCKED descendant (children, their children, ...,
--                                    through BLOCKED tasks only) ends CANCELLED with cancel_reason
--                                    'dependency_failed', finished_at now and no attempt, in one
--                                    statement (the descendants' own firings see it done).
--               FAILED or CANCELLED -> a live state (tf_retry, the operator's redrive)
--                                    each child that was CANCELLED with 'dependency_failed'
--                                    becomes BLOCKED again, counting its parents not SUCCEEDED,
--                                    unless another of its parents is still FAILED or CANCELLED;
--                                    such a child has children of its own, so the same rule
--                                    carries the redrive down the graph (one trigger level per
--                                    generation).
--             A SUCCEEDED task never changes state again, so each parent's success is counted
--             once.
-- Fires:      as the row trigger tasks_release_children (db/schema/55_triggers.sql): AFTER UPDATE
--             OF state ON taskforge.tasks FOR EACH ROW WHEN (NEW.has_children). Why a trigger:
--             the terminal states are written by taskforge._tf_turn (finalize), tf_recover,
--             tf_cancel and the cancel cascade itself; the table is on every such path. Tasks
--             without children pay the WHEN test of one boolean column and never call this.
-- Concurrency: the children are changed by UPDATE statements, which lock each child row and
--             re-read its latest version: two parents of one child succeeding in concurrent
--             transactions are counted one after the other (the second waits for the first's
--             commit), so the last success always sees a count of 1. A submit that adds a child
--             locks the parent first (taskforge._tf_submit_one), so a parent cannot end unseen
--             between the child's read of its state and the child's commit. The redrive locks
--             the other parents (FOR SHARE) before it counts them, so a parent succeeding at the
--             same time is either counted as SUCCEEDED or decrements the count afterwards.
--             Two transactions ending parents that share children in opposite orders can
--             deadlock (40P01; one is rolled back and the worker's finalize is retried).
-- Returns:    NULL (an AFTER trigger's result is ignored).
-- Errors:     none of its own.
-- Locks:      the children's (and descendants') rows; for the redrive, the other parents' rows.
-- Clock:      NEW.updated_at: the now of the statement that changed the parent, so the child's
--             finished_at or updated_at equals its parent's.
-- By hand:    not callable (a trigger function).
CREATE OR REPLACE FUNCTION taskforge._tf_release_children()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz := NEW.updated_at;
    v_queues text[];
BEGIN
    IF OLD.state IS NOT DISTINCT FROM NEW.state THEN
        RETURN NULL;
    END IF;
    IF NEW.state = 'SUCCEEDED' THEN
        WITH released AS (
            UPDATE taskforge.tasks c
               SET parents_pending = c.parents_pending - 1,
                   state = CASE WHEN c.parents_pending <= 1 THEN 'QUEUED' ELSE 'BLOCKED' END,
                   updated_at = v_now
              FROM taskforge.task_dependencies d
             WHERE d.parent_task_id = NEW.task_id AND c.task_id = d.child_task_id AND c.state = 'BLOCKED'
            RETURNING c.state, c.queue, c.scheduled_at
        )
        SELECT array_agg(DISTINCT r.queue) INTO v_queues
          FROM released r WHERE r.state = 'QUEUED' AND r.scheduled_at <= v_now;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    ELSIF NEW.state IN ('FAILED', 'CANCELLED') THEN
        IF pg_trigger_depth() > 1 AND OLD.state = 'BLOCKED' AND NEW.cancel_reason = 'dependency_failed' THEN
            -- Cancelled by the cascade below, which has reached its descendants already.
            RETURN NULL;
        END IF;
        WITH RECURSIVE descendants AS (
            SELECT d.child_task_id AS task_id
              FROM taskforge.task_dependencies d
             WHERE d.parent_task_id = NEW.task_id
            UNION
            SELECT d.child_task_id
              FROM descendants s
              JOIN taskforge.task_dependencies d ON d.parent_task_id = s.task_id
        )
        UPDATE taskforge.tasks c
           SET state = 'CANCELLED', parents_pending = 0, cancel_requested_at = v_now,
               cancel_reason = 'dependency_failed', finished_at = v_now, updated_at = v_now
          FROM descendants s
         WHERE c.task_id = s.task_id AND c.state = 'BLOCKED';
    ELSIF OLD.state IN ('FAILED', 'CANCELLED') AND NEW.state NOT IN ('FAILED', 'CANCELLED') THEN
        -- The other parents of the children to redrive, locked before they are counted.
        PERFORM 1
           FROM taskforge.tasks p
          WHERE p.task_id IN (SELECT o.parent_task_id
                                FROM taskforge.task_dependencies d
                                JOIN taskforge.tasks c ON c.task_id = d.child_task_id
                                JOIN taskforge.task_dependencies o ON o.child_task_id = c.task_id
                               WHERE d.parent_task_id = NEW.task_id AND c.state = 'CANCELLED'
                                 AND c.cancel_reason = 'dependency_failed' AND o.parent_task_id <> NEW.task_id)
          ORDER BY p.task_id
            FOR SHARE OF p;
        UPDATE taskforge.tasks c
           SET state = 'BLOCKED',
               parents_pending = (SELECT count(*) FROM taskforge.task_dependencies o
                                    JOIN taskforge.tasks p ON p.task_id = o.parent_task_id
                                   WHERE o.child_task_id = c.task_id AND p.state <> 'SUCCEEDED'),
               cancel_requested_at = NULL, cancel_reason = NULL, finished_at = NULL, updated_at = v_now
          FROM taskforge.task_dependencies d
         WHERE d.parent_task_id = NEW.task_id AND c.task_id = d.child_task_id
           AND c.state = 'CANCELLED' AND c.cancel_reason = 'dependency_failed'
           AND NOT EXISTS (SELECT 1 FROM taskforge.task_dependencies o
                             JOIN taskforge.tasks p ON p.task_id = o.parent_task_id
                            WHERE o.child_task_id = c.task_id AND p.state IN ('FAILED', 'CANCELLED'));
    END IF;
    RETURN NULL;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_release_children() IS
    'Private trigger (tasks_release_children): a parent SUCCEEDED releases its BLOCKED children when their last parent succeeds (QUEUED); FAILED/CANCELLED cancels its BLOCKED descendants (dependency_failed); a redriven parent re-blocks the children it cancelled.';
REVOKE ALL ON FUNCTION taskforge._tf_release_children() FROM PUBLIC;
