-- taskforge.tf_retry(task_id numeric, extra_attempts numeric DEFAULT 1)
--   -> TABLE(task_state text, max_attempts int)
--
-- Purpose:    operator replay of a dead-lettered task (FAILED or CANCELLED) back to QUEUED, due
--             now. History is kept: earlier attempts stay as they were and the next claim
--             creates attempt N+1. The budget becomes max(max_attempts, attempts so far +
--             extra_attempts), so at least extra_attempts further attempts are allowed.
--             The task keeps its id, idempotency key and fingerprint; result, last_error and
--             the cancel request are cleared.
--             A task with parents (depends_on) goes back to BLOCKED instead when a parent is
--             not SUCCEEDED, and a parent FAILED or CANCELLED refuses the retry (TF409: redrive
--             the parent first). A redriven task that has children brings back the children it
--             cancelled ('dependency_failed') as BLOCKED, and so on down the graph
--             (taskforge._tf_release_children): tf_retry of a failed parent replays its flow.
--             A task with an ordering key is refused (TF409) while another task of its key is
--             RUNNING: redriven, it is the key's head again and would run beside that one.
-- Parameters: task_id  a whole number within bigint (declared numeric: any number a caller
--             writes gets TF400 naming it, not 42883); extra_attempts  whole number 1..1000.
-- Returns:    one row: 'QUEUED' (or 'BLOCKED', above) and the new max_attempts.
-- Errors:     TF400 naming the argument (also when the budget would pass 10000);
--             TF404 no such task; TF409 the task is QUEUED, RUNNING, RETRYING or SUCCEEDED
--             (a success is never replayed; cancel first to replay waiting work), or a
--             parent of it is FAILED or CANCELLED, or a task of its ordering key is RUNNING.
-- Locks:      the tasks row FOR UPDATE; with parents, their rows FOR SHARE; with an ordering
--             key, its taskforge.ordering_keys row FOR UPDATE.
-- Notify:     pg_notify('taskforge', queue) (on commit).
-- Clock:      clock_timestamp() at entry.
-- By hand:    yes; it is the dead-letter redrive.
CREATE OR REPLACE FUNCTION taskforge.tf_retry(task_id numeric, extra_attempts numeric DEFAULT 1)
RETURNS TABLE(task_state text, max_attempts int)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_now timestamptz := clock_timestamp();
    v_task taskforge.tasks%ROWTYPE;
    v_budget int;
    v_pending int := 0;
    v_failed_parent bigint;
    v_running bigint;
    v_state text := 'QUEUED';
BEGIN
    PERFORM taskforge._tf_check_task_id('task_id', tf_retry.task_id);
    v_task_id := tf_retry.task_id;  -- checked: a whole number within bigint
    PERFORM taskforge._tf_check_int('extra_attempts', tf_retry.extra_attempts, 1, 1000);
    v_task := taskforge._tf_lock_task(v_task_id);
    IF v_task.state NOT IN ('FAILED', 'CANCELLED') THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: task %s is %s; only FAILED or CANCELLED tasks can be retried',
                             v_task_id, v_task.state),
            COLUMN = 'task_id';
    END IF;
    v_budget := greatest(v_task.max_attempts, v_task.attempt_count + tf_retry.extra_attempts);
    IF v_budget > 10000 THEN
        PERFORM taskforge._tf_invalid('extra_attempts', format('would raise max_attempts to %s; the limit is 10000', v_budget));
    END IF;

    -- Parents (depends_on): locked, then judged.
    PERFORM 1 FROM taskforge.tasks p
     WHERE p.task_id IN (SELECT d.parent_task_id FROM taskforge.task_dependencies d WHERE d.child_task_id = v_task_id)
     ORDER BY p.task_id FOR SHARE OF p;
    SELECT count(*) FILTER (WHERE p.state <> 'SUCCEEDED'),
           min(p.task_id) FILTER (WHERE p.state IN ('FAILED', 'CANCELLED'))
      INTO v_pending, v_failed_parent
      FROM taskforge.task_dependencies d JOIN taskforge.tasks p ON p.task_id = d.parent_task_id
     WHERE d.child_task_id = v_task_id;
    IF v_failed_parent IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409',
            MESSAGE = format('task_id: task %s depends on task %s, which is %s; retry that one first',
                             v_task_id, v_failed_parent, taskforge._tf_task_state(v_failed_parent)),
            COLUMN = 'task_id';
    END IF;
    IF v_pending > 0 THEN
        v_state := 'BLOCKED';
    END IF;
    -- An ordering key: under its row lock (the one its claims take), no task of the key may be
    -- RUNNING, or the redriven task, the key's head again, would run beside it.
    IF v_task.ordering_key IS NOT NULL THEN
        PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = v_task.ordering_key FOR UPDATE;
        SELECT min(e.task_id) INTO v_running FROM taskforge.tasks e
         WHERE e.state = 'RUNNING' AND e.ordering_key = v_task.ordering_key;
        IF v_running IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'TF409',
                MESSAGE = format('task_id: task %s of the same ordering key %s is RUNNING; retry task %s once it has ended',
                                 v_running, quote_literal(v_task.ordering_key), v_task_id),
                COLUMN = 'task_id';
        END IF;
    END IF;

    UPDATE taskforge.tasks t
       SET state = v_state, parents_pending = v_pending, max_attempts = v_budget, scheduled_at = v_now,
           finished_at = NULL, result = NULL, last_error = NULL,
           cancel_requested_at = NULL, cancel_reason = NULL, updated_at = v_now
     WHERE t.task_id = v_task_id;
    IF v_state = 'QUEUED' THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[v_task.queue]);
    END IF;
    RETURN QUERY SELECT v_state, v_budget;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_retry(numeric, numeric) IS
    'Dead-letter redrive: FAILED/CANCELLED -> QUEUED (BLOCKED while a parent is unfinished; TF409 if one failed; its cancelled dependants come back) with budget max(max_attempts, attempts + extra_attempts); history kept. Errors: TF400, TF404, TF409 (state does not allow it).';
REVOKE ALL ON FUNCTION taskforge.tf_retry(numeric, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_retry(numeric, numeric) TO taskforge_client;
