-- taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000) -> int
--
-- Purpose:    retention. Delete terminal tasks (SUCCEEDED, FAILED, CANCELLED) that finished
--             more than older_than_seconds ago, oldest first, at most max_tasks per call; their
--             attempts go with them (ON DELETE CASCADE) and their idempotency keys become free.
--             Call repeatedly while it returns max_tasks (the scheduler does, with --retain-days).
--             A parent (depends_on) is kept while one of its children is not terminal, so the
--             child's handler can still read its result; the dependency edges of the deleted
--             tasks are deleted with them.
--             On the partitioned history (tf_partition_history) it deletes no row: it drops the
--             oldest whole task-id range whose tasks all qualify, one range a call
--             (taskforge._tf_drop_partitions, whose header has the tests, the locks and the
--             pause they cost), and max_tasks does not apply: the count returned is the range's
--             tasks, any size; calling again while it is at least max_tasks drops the next.
-- Parameters: older_than_seconds  0..3153600000 seconds (100 years).
--             max_tasks           whole number 1..100000.
-- Returns:    the number of tasks deleted.
-- Bad rows:   one task that cannot be deleted never stops the others, as in tf_recover: the
--             batch is deleted by one statement (taskforge._tf_prune_rows); when it raises an
--             error about a row (taskforge._tf_maintenance_row_error), the same locked batch is
--             deleted task by task, each in its own subtransaction; a task that fails is
--             recorded in maintenance_errors (tf_maintenance_errors; a WARNING the first time
--             the error is seen) and left out until its retry_after (60 s doubling to 1 h), so
--             a call that returns less than max_tasks still means the old history is gone except
--             the recorded tasks. Its entry is deleted once the task is deleted or not terminal.
-- Errors:     TF400 naming the argument; errors that are not about a row (a deadlock, a lock
--             timeout, a read-only server, a missing object) fail the call as before.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen rows (a task being retried is skipped); the
--             maintenance_errors entries it writes. On the partitioned history, those of
--             taskforge._tf_drop_partitions (ACCESS EXCLUSIVE on tasks and attempts while a
--             range is tested exactly and dropped); its bad-row fallback does not apply there.
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter).
-- Clock:      clock_timestamp() at entry (the cutoff, retry_after).
-- By hand:    yes; what it deletes is gone (take a backup if you need the history).
CREATE OR REPLACE FUNCTION taskforge.tf_prune(older_than_seconds double precision, max_tasks numeric DEFAULT 10000)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_skip bigint[];
    v_has_errors boolean;
    v_ids bigint[];
    v_id bigint;
    v_deleted int := 0;
    v_sqlstate text;
    v_message text;
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_tasks', tf_prune.max_tasks, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune.older_than_seconds);
    IF EXISTS (SELECT 1 FROM taskforge.history_layout) THEN
        RETURN taskforge._tf_drop_partitions(v_cutoff);  -- the partitioned history: whole ranges
    END IF;

    -- Tasks recorded as failing recently are left out until their retry_after.
    SELECT coalesce(array_agg(e.subject::bigint) FILTER (WHERE e.retry_after > v_now), '{}'), count(*) > 0
      INTO v_skip, v_has_errors
      FROM taskforge.maintenance_errors e WHERE e.sweep = 'tf_prune';

    -- The batch, locked in this (outer) transaction: the locks outlive a failed attempt below.
    SELECT coalesce(array_agg(v.task_id ORDER BY v.finished_at, v.task_id), '{}') INTO v_ids
      FROM (SELECT t.task_id, t.finished_at
              FROM taskforge.tasks t
             WHERE t.finished_at < v_cutoff AND t.task_id <> ALL (v_skip)
               -- A parent stays while a child is not terminal (its handler may read the result).
               AND (NOT t.has_children
                    OR NOT EXISTS (SELECT 1 FROM taskforge.task_dependencies d
                                     JOIN taskforge.tasks c ON c.task_id = d.child_task_id
                                    WHERE d.parent_task_id = t.task_id AND c.finished_at IS NULL))
             ORDER BY t.finished_at
             LIMIT tf_prune.max_tasks
               FOR UPDATE OF t SKIP LOCKED) v;

    IF cardinality(v_ids) > 0 THEN
        BEGIN
            v_deleted := taskforge._tf_prune_rows(v_ids, v_cutoff);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE;
            IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                RAISE;
            END IF;
            -- One bad row: the batch again, task by task, each in a subtransaction of its own.
            v_deleted := 0;
            FOREACH v_id IN ARRAY v_ids LOOP
                BEGIN
                    v_deleted := v_deleted + taskforge._tf_prune_rows(ARRAY[v_id], v_cutoff);
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_sqlstate = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
                    IF NOT taskforge._tf_maintenance_row_error(v_sqlstate) THEN
                        RAISE;
                    END IF;
                    PERFORM taskforge._tf_maintenance_failed('tf_prune', v_id::text, v_sqlstate, v_message, v_now);
                    v_has_errors := true;
                END;
            END LOOP;
        END;
    END IF;

    IF v_has_errors THEN
        -- Entries of tasks that are gone (deleted now) or no longer terminal (retried by hand).
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_prune'
           AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t
                            WHERE t.task_id = e.subject::bigint AND t.finished_at IS NOT NULL);
    END IF;
    RETURN v_deleted;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune(double precision, numeric) IS
    'Retention: delete terminal tasks finished more than older_than_seconds ago (oldest first, at most max_tasks) with their attempts; frees their idempotency keys. A task that fails to delete is skipped and recorded (tf_maintenance_errors), the others are deleted. Returns the count. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune(double precision, numeric) TO taskforge_scheduler;
