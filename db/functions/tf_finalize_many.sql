-- taskforge.tf_finalize_many(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL)
--   -> TABLE(task_id bigint, attempt_number int, accepted boolean, task_state text, reason text)
--
-- Purpose:    the batch form of tf_finalize: record how up to 1000 attempts of one worker
--             ended, in one statement and one commit. Element i is (task_ids[i],
--             attempt_numbers[i], outcomes[i], results[i], errors[i]); each obeys exactly
--             tf_finalize's guard (RUNNING, same attempt, same owner, lease unexpired) and
--             outcome rules (see tf_finalize), and a refused element changes nothing.
--             Unlike tf_finalize it never waits for a row lock: a task whose row another
--             transaction holds is skipped (SKIP LOCKED) and reported busy, so a caller never
--             needs a lock timeout; send such elements again a moment later.
-- Parameters: worker_id        the worker that owns the attempts.
--             task_ids         1..1000 task ids (whole numbers within bigint), no NULL, no task twice.
--             attempt_numbers  as many attempt numbers (whole numbers 1..2147483647).
--             Both arrays are declared numeric[] so that any number a caller writes gets TF400
--             naming the element, not 42883; they are converted once checked.
--             outcomes         text[] of the same length: succeeded | failed | retryable | cancelled.
--             results          jsonb[] of the same length or NULL; each at most 1 MiB as JSON
--                              text and nested at most 100 levels deep; stored for succeeded
--                              elements.
--             errors           jsonb[] of the same length or NULL; a non-object becomes
--                              {"message": ...}; capped at 16 KiB, flattened to text when nested
--                              more than 100 levels deep; stored for other outcomes.
-- Returns:    one row per element, in input order: accepted; the task state after the call
--             (as last committed when refused; NULL for not_found); reason NULL when accepted,
--             else busy | not_found | not_running | stale_attempt | not_owner | timed_out | lease_expired.
-- Errors:     TF400 naming the argument and element (e.g. 'outcomes[2]: must be one of ...').
--             Nothing is written when an error is raised.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks rows (never waits), then their attempt rows.
-- Writes:     taskforge._tf_turn's one statement (tf_finalize and tf_finalize_and_claim write
--             through it too); the arguments are checked first by taskforge._tf_check_batch.
-- Notify:     only for the tasks submitted with notify_finished that this call ends:
--             pg_notify('taskforge_finished', task_id) each, on commit (the row trigger of
--             taskforge._tf_notify_finished); no other NOTIFY.
-- Clock:      clock_timestamp() once (nothing is waited for): guard, finish time, backoff start.
-- By hand:    only for attempts you own (the guard makes a stale element harmless).
CREATE OR REPLACE FUNCTION taskforge.tf_finalize_many(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL)
RETURNS TABLE(task_id bigint, attempt_number int, accepted boolean, task_state text, reason text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    IF NOT coalesce(taskforge._tf_valid_batch_of_one(tf_finalize_many.worker_id, tf_finalize_many.task_ids, tf_finalize_many.attempt_numbers,
                                               tf_finalize_many.outcomes, tf_finalize_many.results, tf_finalize_many.errors, true), false) THEN
        -- Not a certainly valid batch of one: the full check, which raises the precise error.
        PERFORM taskforge._tf_check_batch(tf_finalize_many.worker_id, tf_finalize_many.task_ids, tf_finalize_many.attempt_numbers,
                                          tf_finalize_many.outcomes, tf_finalize_many.results, tf_finalize_many.errors, true);
    END IF;
    -- Checked: task_ids are whole numbers within bigint, attempt numbers within int.
    RETURN QUERY
    SELECT f.task_id, f.attempt_number, f.accepted, f.task_state, f.reason
      FROM taskforge._tf_turn(tf_finalize_many.worker_id, tf_finalize_many.task_ids::bigint[],
                              tf_finalize_many.attempt_numbers::int[], tf_finalize_many.outcomes,
                              tf_finalize_many.results, tf_finalize_many.errors, '{}', NULL,
                              clock_timestamp()) AS f;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize_many(uuid, numeric[], numeric[], text[], jsonb[], jsonb[]) IS
    'Batch tf_finalize: one row per element in input order, same guard and outcome rules; rows locked elsewhere are skipped (SKIP LOCKED) and reported busy. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize_many(uuid, numeric[], numeric[], text[], jsonb[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize_many(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[]
) TO taskforge_worker;
