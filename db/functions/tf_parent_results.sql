-- taskforge.tf_parent_results(task_id numeric, worker_id uuid, attempt_number numeric)
--   -> TABLE(parent_task_id bigint, state text, result jsonb)
--
-- Purpose:    what a handler reads as its parents' results (ctx.parent_results in the Python
--             and Node workers): one row per parent of the task (tf_submit's depends_on), with
--             its state (SUCCEEDED for every parent of a task that started) and its result.
--             Workers read no view (docs/design.md §7), so this function is their way, and
--             like tf_renew it takes the attempt's fencing token: only the worker running
--             that attempt gets the rows. Clients and the console read the view
--             tf_task_dependencies instead.
-- Parameters: task_id, worker_id, attempt_number  the attempt (tf_claim's columns).
-- Returns:    the parents in task id order; no rows for a task without parents.
-- Errors:     TF400 naming the argument; TF404 no such task; TF409 'task_id: ...' when that
--             attempt does not hold the task (not RUNNING, another attempt or another worker).
-- Locks:      none.
-- Clock:      none.
-- By hand:    yes, with a held attempt.
CREATE OR REPLACE FUNCTION taskforge.tf_parent_results(task_id numeric, worker_id uuid, attempt_number numeric)
RETURNS TABLE(parent_task_id bigint, state text, result jsonb)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_task taskforge.tasks%ROWTYPE;
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_parent_results.task_id);
    v_task_id := tf_parent_results.task_id;  -- checked: a whole number within bigint
    IF tf_parent_results.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    PERFORM taskforge._tf_check_int('attempt_number', tf_parent_results.attempt_number, 1, 10000);
    SELECT * INTO v_task FROM taskforge.tasks t WHERE t.task_id = v_task_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404', MESSAGE = format('task_id: no task %s', v_task_id),
            COLUMN = 'task_id';
    END IF;
    IF v_task.state <> 'RUNNING' OR v_task.owner_worker_id IS DISTINCT FROM tf_parent_results.worker_id
       OR v_task.attempt_count <> tf_parent_results.attempt_number THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: attempt %s of task %s is not held by worker %s (task is %s at attempt %s)',
                             tf_parent_results.attempt_number, v_task_id, tf_parent_results.worker_id,
                             v_task.state, v_task.attempt_count),
            COLUMN = 'task_id';
    END IF;
    RETURN QUERY
        SELECT p.task_id, p.state::text, p.result
          FROM taskforge.task_dependencies d
          JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
         WHERE d.child_task_id = v_task_id
         ORDER BY p.task_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) IS
    'A running attempt''s parents (depends_on) with their state and result, for the worker holding that attempt (fencing token as tf_renew). Errors: TF400, TF404, TF409 (attempt not held).';
REVOKE ALL ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_parent_results(numeric, uuid, numeric) TO taskforge_worker;
