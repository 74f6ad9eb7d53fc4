-- taskforge.tf_make_partitions() -> int
--
-- Purpose:    on the partitioned history (tf_partition_history; docs/operations.md,
--             "Partitioned history"), keep history_layout.partitions_ahead empty task-id ranges
--             made beyond the range the next task id falls in, so a submit always finds its
--             partition: a range of tasks_per_partition ids is a pair taskforge.tasks_p<N>,
--             taskforge.attempts_p<N> (taskforge._tf_add_partition), N = first id /
--             tasks_per_partition. The scheduler calls it before every pass, in a statement of
--             its own, and tf_maintain every pass;
--             on the default layout it reads one empty table and returns 0. A submit whose id has
--             no partition fails with 23514 (no partition of relation "tasks" found for row):
--             run a scheduler or tf_maintain, or raise partitions_ahead, so that never happens.
-- Parameters: none.
-- Returns:    the number of ranges made (0: enough were there, or the default layout).
-- Errors:     none of its own. When the ACCESS EXCLUSIVE lock on tasks/attempts is not granted
--             within lock_timeout (1 s: a long transaction reads the tables), or a deadlock with
--             a reader that locked attempts first ends the wait, it makes none this time,
--             raises a WARNING and returns 0; the next call tries again.
-- Locks:      history_layout's row (FOR UPDATE, so two callers make each range once) and, to
--             create a range, until the caller commits: ACCESS EXCLUSIVE on tasks and attempts
--             (every claim and submit waits, also while it is queued, at most lock_timeout) and
--             SHARE ROW EXCLUSIVE on task_types and workers (the new partitions' foreign keys:
--             heartbeats wait). Call it in a transaction of its own (the scheduler does).
-- Clock:      clock_timestamp() (the ranges' created_at).
-- By hand:    yes; harmless.
CREATE OR REPLACE FUNCTION taskforge.tf_make_partitions()
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 1000
AS $fn$
DECLARE
    v_size bigint;
    v_ahead int;
    v_last bigint;
    v_end bigint;
    v_need bigint;
    v_made int := 0;
BEGIN
    SELECT l.tasks_per_partition, l.partitions_ahead INTO v_size, v_ahead FROM taskforge.history_layout l;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    SELECT s.last_value INTO v_last FROM taskforge.tasks_task_id_seq s;
    v_need := (v_last / v_size + 1 + v_ahead) * v_size;
    IF (SELECT max(p.end_task_id) FROM taskforge.history_partitions p) >= v_need THEN
        RETURN 0;
    END IF;
    BEGIN
        PERFORM 1 FROM taskforge.history_layout l FOR UPDATE;
        SELECT max(p.end_task_id) INTO v_end FROM taskforge.history_partitions p;
        WHILE v_end < v_need LOOP
            PERFORM taskforge._tf_add_partition(v_end);
            v_end := v_end + v_size;
            v_made := v_made + 1;
        END LOOP;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        RAISE WARNING 'taskforge: tf_make_partitions: tasks or attempts stayed locked for lock_timeout (or a '
            'deadlock with a reader); no range made this time (ranges left ahead: %)',
            greatest((coalesce(v_end, 0) - (v_last / v_size + 1) * v_size) / v_size, 0);
        RETURN 0;
    END;
    RETURN v_made;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_make_partitions() IS
    'Partitioned history: make task-id ranges (tasks_p<N>, attempts_p<N>) so that partitions_ahead empty ones lie beyond the next task id. Returns the number made; 0 on the default layout.';
REVOKE ALL ON FUNCTION taskforge.tf_make_partitions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_make_partitions() TO taskforge_scheduler;
