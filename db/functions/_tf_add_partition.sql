-- taskforge._tf_add_partition(first_task_id bigint) -> void             (private helper)
--
-- Purpose:    make one range of the partitioned history (docs/operations.md, "Partitioned
--             history"): taskforge.tasks_p<N> for task ids [first_task_id, first_task_id +
--             tasks_per_partition), N = first_task_id / tasks_per_partition (the layout's, in
--             taskforge.history_layout), its twin taskforge.attempts_p<N> with the foreign key
--             (task_id) to it (ON DELETE CASCADE, the default layout's attempts -> tasks key,
--             range by range), both with the storage parameters recorded in history_layout, and
--             its row in taskforge.history_partitions. Indexes, checks, the other foreign keys
--             and the row triggers come from the partitioned parents. (The first range, the
--             tables from before the conversion, is attached by tf_partition_history instead.)
-- Parameters: first_task_id  a multiple of tasks_per_partition: the range's first id.
-- Returns:    nothing.
-- Errors:     42P07 when the partition exists; 42P17 (invalid object definition) when the range
--             overlaps one that exists; 55P03 when a lock is not granted within the caller's
--             lock_timeout.
-- Locks:      ACCESS EXCLUSIVE on taskforge.tasks and taskforge.attempts (creating a partition
--             of a partitioned table takes it on PostgreSQL 15), SHARE ROW EXCLUSIVE on
--             task_types and workers (the foreign keys), until the caller commits.
-- Clock:      clock_timestamp() for created_at.
-- By hand:    no; tf_make_partitions and tf_partition_history call it.
CREATE OR REPLACE FUNCTION taskforge._tf_add_partition(first_task_id bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_layout taskforge.history_layout%ROWTYPE;
    v_no bigint;
    v_end bigint;
BEGIN
    SELECT * INTO STRICT v_layout FROM taskforge.history_layout;
    v_no := _tf_add_partition.first_task_id / v_layout.tasks_per_partition;
    v_end := _tf_add_partition.first_task_id + v_layout.tasks_per_partition;
    EXECUTE format('CREATE TABLE taskforge.%I PARTITION OF taskforge.tasks FOR VALUES FROM (%s) TO (%s)%s',
                   'tasks_p' || v_no, _tf_add_partition.first_task_id, v_end,
                   CASE WHEN v_layout.tasks_options IS NOT NULL
                        THEN format(' WITH (%s)', array_to_string(v_layout.tasks_options, ', ')) ELSE '' END);
    EXECUTE format('CREATE TABLE taskforge.%I PARTITION OF taskforge.attempts FOR VALUES FROM (%s) TO (%s)%s',
                   'attempts_p' || v_no, _tf_add_partition.first_task_id, v_end,
                   CASE WHEN v_layout.attempts_options IS NOT NULL
                        THEN format(' WITH (%s)', array_to_string(v_layout.attempts_options, ', ')) ELSE '' END);
    EXECUTE format('ALTER TABLE taskforge.%I ADD CONSTRAINT %I FOREIGN KEY (task_id) REFERENCES taskforge.%I (task_id) '
                   'ON DELETE CASCADE',
                   'attempts_p' || v_no, 'attempts_p' || v_no || '_task_id_fkey', 'tasks_p' || v_no);
    INSERT INTO taskforge.history_partitions (partition_no, first_task_id, end_task_id, created_at)
    VALUES (v_no, _tf_add_partition.first_task_id, v_end, clock_timestamp());
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_add_partition(bigint) IS
    'Private: create tasks_p<N> and attempts_p<N> for the task_id range starting at first_task_id (tasks_per_partition ids), attempts referring to their twin, and record it in history_partitions.';
REVOKE ALL ON FUNCTION taskforge._tf_add_partition(bigint) FROM PUBLIC;
