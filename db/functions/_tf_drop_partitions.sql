-- taskforge._tf_drop_partitions(cutoff timestamptz) -> int              (private helper)
--
-- Purpose:    tf_prune on the partitioned history (tf_partition_history): drop every task-id
--             range (taskforge.tasks_p<N> with its twin attempts_p<N>, oldest first) that
--             - lies wholly below the next task id (no submit can draw an id in it any more),
--             - holds only terminal tasks (SUCCEEDED, FAILED, CANCELLED) finished before cutoff,
--             - and holds no parent (depends_on) of a task that is not terminal, in any range;
--             with the idempotency keys of its tasks and the dependency edges naming them. A
--             range that fails a test stays whole (one long-running or far-scheduled task
--             keeps its range: nothing is lost, the drop waits); later ranges are still looked at.
--             Each range is tested first without locks and through indexes only (a probe of
--             each partial index of the live states, of the dependency edges for BLOCKED, and
--             of the newest finish), so a range that must stay costs a few index probes however
--             many tasks it holds; then again exactly, reading each of its rows, under ACCESS
--             EXCLUSIVE on tasks and attempts, so a submit, tf_retry or finalize that committed
--             before the lock is seen and one after it finds the range gone (tf_retry: TF404,
--             as after a row-wise prune).
-- Parameters: cutoff  tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks dropped (all ranges of this call).
-- Errors:     none of its own: a range whose lock is not granted within lock_timeout (1 s) is
--             left, with a WARNING, for the next call, and so are the ranges after it.
-- Locks:      ACCESS EXCLUSIVE on taskforge.tasks and taskforge.attempts, from the exact test of
--             the first range that passed the probes to the caller's commit: claims, submits and
--             console reads wait for one sequential scan of that range's tasks and the drops
--             (docs/operations.md, "Partitioned history": ranges small enough for that pause).
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
    v_dropped bigint := 0;
    v_first bigint;
    v_end bigint;
    v_locked boolean := false;
    v_table text;
    r record;
BEGIN
    SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END INTO v_next
      FROM taskforge.tasks_task_id_seq s;
    FOR r IN SELECT p.partition_no, p.first_task_id, p.end_task_id FROM taskforge.history_partitions p
              WHERE p.end_task_id <= v_next ORDER BY p.end_task_id LOOP
        v_first := coalesce(r.first_task_id, -9223372036854775808);
        v_end := r.end_task_id;
        v_table := format('taskforge.%I', 'tasks_p' || r.partition_no);

        -- The first test, without locks, reads only indexes, so a range that must stay costs
        -- little whatever its size: a live task in one of the partial indexes of the live
        -- states (a BLOCKED one through its dependency edges), or a finish after the cutoff
        -- (the newest entry of tasks_finished_idx).
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
        IF NOT v_locked THEN
            BEGIN
                LOCK TABLE taskforge.tasks, taskforge.attempts IN ACCESS EXCLUSIVE MODE;
            EXCEPTION WHEN lock_not_available THEN
                RAISE WARNING 'taskforge: tf_prune: tasks and attempts stayed locked for lock_timeout; '
                    'range % (tasks_p%) is left for the next call', r.partition_no, r.partition_no;
                RETURN v_dropped;
            END;
            v_locked := true;
        END IF;
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
        v_dropped := v_dropped + v_tasks;
    END LOOP;
    RETURN least(v_dropped, 2147483647);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_drop_partitions(timestamptz) IS
    'Private: tf_prune on the partitioned history: drop each task-id range below the next id whose tasks all ended before cutoff and parent no live task, with their keys and edges; returns the tasks dropped.';
REVOKE ALL ON FUNCTION taskforge._tf_drop_partitions(timestamptz) FROM PUBLIC;
