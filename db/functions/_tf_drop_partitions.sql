-- taskforge._tf_drop_partitions(cutoff timestamptz) -> int              (private helper)
--
-- Purpose:    tf_prune on the partitioned history (tf_partition_history): drop the oldest task-id
--             range (taskforge.tasks_p<N> with its twin attempts_p<N>) that
--             - lies wholly below the next task id (every id in it drawn; a submit that drew one
--               holds a lock on tasks until it commits, which the drop's lock waits for),
--             - holds only terminal tasks (SUCCEEDED, FAILED, CANCELLED) finished before cutoff,
--             - and holds no parent (depends_on) of a task that is not terminal, in any range;
--             with the idempotency keys of its tasks and the dependency edges naming them. One
--             range a call: call again while the count is at least your batch (the scheduler and
--             tf_maintain do). A range that fails a test stays whole (one long-running or
--             far-scheduled task keeps its range: nothing is lost, the drop waits); later ranges
--             are still looked at.
--             Each range is tested first through indexes only, without waiting for a lock (a
--             probe of each partial index of the live states, of the range's dependency edges
--             for BLOCKED tasks, and of the newest finish), so a range that must stay costs a
--             few index reads however many tasks it holds; then exactly, reading each of its
--             rows, under ACCESS EXCLUSIVE on tasks and attempts, so a submit, tf_retry or
--             finalize that committed before the lock is seen and one after it finds the range
--             gone (tf_retry: TF404, as after a row-wise prune).
-- Parameters: cutoff  tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks dropped (0: no range could go, or another caller is dropping).
-- Errors:     none of its own: when the lock is not granted within lock_timeout (1 s), or a
--             deadlock with a reader that locked attempts before tasks (the views) ends the
--             wait, the range is left, with a WARNING, for the next call.
-- Locks:      history_layout's row (FOR UPDATE SKIP LOCKED: one caller at a time); ACCESS
--             SHARE on the partitions probed; ACCESS EXCLUSIVE on taskforge.tasks and
--             taskforge.attempts from the exact test of a range that passed the probes to the
--             caller's commit: claims, submits and console reads wait for one sequential scan of
--             that range's tasks and the drop. The first range after a conversion holds the whole
--             history from before it: prune row-wise before converting (docs/operations.md,
--             "Partitioned history").
-- Clock:      none (the caller's cutoff).
-- By hand:    no: call tf_prune.
CREATE OR REPLACE FUNCTION taskforge._tf_drop_partitions(cutoff timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 1000
AS $fn$
DECLARE
    v_next bigint;
    v_tasks bigint;
    v_blocking bigint;
    v_newest timestamptz;
    v_live boolean;
    v_first bigint;
    v_end bigint;
    v_table text;
    r record;
BEGIN
    -- One caller at a time (a second one returns at once: the first drops what there is), so
    -- no two callers lock the same range's partitions in opposite orders, and the list of
    -- ranges read next is not changed under it by another caller.
    PERFORM 1 FROM taskforge.history_layout l FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END INTO v_next
      FROM taskforge.tasks_task_id_seq s;
    FOR r IN SELECT p.partition_no, p.first_task_id, p.end_task_id FROM taskforge.history_partitions p
              WHERE p.end_task_id <= v_next ORDER BY p.end_task_id LOOP
        v_first := coalesce(r.first_task_id, -9223372036854775808);
        v_end := r.end_task_id;
        v_table := format('taskforge.%I', 'tasks_p' || r.partition_no);

        -- The first test reads only indexes, without waiting for a lock (ACCESS SHARE on the
        -- partition), so a range that must stay costs little whatever its size: a live task in
        -- one of the partial indexes of the live states (a BLOCKED one through the range's
        -- dependency edges), or a finish after the cutoff (the newest entry of
        -- tasks_finished_idx).
        EXECUTE format(
            'SELECT EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''QUEUED'' AND NOT t.keyed)'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''QUEUED'' AND t.keyed)'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''RUNNING'')'
            ' OR EXISTS (SELECT 1 FROM %1$s t WHERE t.state = ''RETRYING'')'
            ' OR EXISTS (SELECT 1 FROM taskforge.task_dependencies d JOIN %1$s t ON t.task_id = d.child_task_id'
            '             WHERE d.child_task_id >= $1 AND d.child_task_id < $2 AND t.state = ''BLOCKED''),'
            ' (SELECT max(t.finished_at) FROM %1$s t WHERE t.finished_at IS NOT NULL)', v_table)
          INTO v_live, v_newest USING v_first, v_end;
        CONTINUE WHEN v_live OR v_newest >= _tf_drop_partitions.cutoff;

        -- Then, under ACCESS EXCLUSIVE on both parents (so a submit, tf_retry or finalize that
        -- committed before it is seen, and one after it finds the range gone), the exact test:
        -- every row of the range read once.
        BEGIN
            LOCK TABLE taskforge.tasks, taskforge.attempts IN ACCESS EXCLUSIVE MODE;
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'taskforge: tf_prune: tasks and attempts stayed locked for lock_timeout (or a '
                'deadlock with a reader); range % (tasks_p%) is left for the next call',
                r.partition_no, r.partition_no;
            RETURN 0;
        END;
        EXECUTE format('SELECT count(*), count(*) FILTER (WHERE t.state NOT IN (''SUCCEEDED'', ''FAILED'', ''CANCELLED'') '
                       'OR NOT t.finished_at < $1) FROM %s t', v_table)
          INTO v_tasks, v_blocking USING _tf_drop_partitions.cutoff;
        CONTINUE WHEN v_blocking > 0;
        -- A parent of a task that has not ended stays (its child's handler reads its result).
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM taskforge.task_dependencies d JOIN taskforge.tasks c ON c.task_id = d.child_task_id
             WHERE d.parent_task_id >= v_first AND d.parent_task_id < v_end AND c.finished_at IS NULL);

        EXECUTE format('DELETE FROM taskforge.idempotency_keys k USING %s t '
                       'WHERE t.idempotency_key IS NOT NULL AND k.idempotency_key = t.idempotency_key', v_table);
        DELETE FROM taskforge.task_dependencies d
         WHERE (d.child_task_id >= v_first AND d.child_task_id < v_end)
            OR (d.parent_task_id >= v_first AND d.parent_task_id < v_end);
        DELETE FROM taskforge.maintenance_errors e
         WHERE e.sweep = 'tf_prune'
           AND CASE WHEN e.sweep = 'tf_prune' THEN e.subject::bigint END >= v_first
           AND CASE WHEN e.sweep = 'tf_prune' THEN e.subject::bigint END < v_end;
        EXECUTE format('DROP TABLE taskforge.%I', 'attempts_p' || r.partition_no);
        EXECUTE format('DROP TABLE %s', v_table);
        DELETE FROM taskforge.history_partitions p WHERE p.partition_no = r.partition_no;
        -- One range a call: the lock ends with the caller's transaction, so a caller that
        -- calls again while the count is at least its batch (the scheduler, tf_maintain)
        -- pauses the workers once per range, not for all of them at once.
        RETURN least(v_tasks, 2147483647);
    END LOOP;
    RETURN 0;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_drop_partitions(timestamptz) IS
    'Private: tf_prune on the partitioned history: drop the oldest task-id range below the next id whose tasks all ended before cutoff and parent no live task, with its keys and edges (one range a call); returns its tasks.';
REVOKE ALL ON FUNCTION taskforge._tf_drop_partitions(timestamptz) FROM PUBLIC;
