-- taskforge.tf_finalize(task_id numeric, worker_id uuid, attempt_number numeric, outcome text,
--     result jsonb DEFAULT NULL, error jsonb DEFAULT NULL, error_text text DEFAULT NULL)
--   -> TABLE(accepted boolean, task_state text, reason text)
--
-- Purpose:    record how an attempt ended, committing the task and attempt outcome together.
--             Guard (taskforge._tf_guard): RUNNING, same attempt, same owner, lease unexpired.
--             A stale call changes nothing and returns accepted = false with the reason.
--             Outcomes (attempt state -> task state; the rule lives in
--             taskforge._tf_attempt_state_after and taskforge._tf_task_state_after):
--               succeeded  attempt SUCCEEDED -> task SUCCEEDED (result stored)
--               failed     attempt FAILED    -> task FAILED (ordinary error: terminal)
--               retryable  attempt FAILED    -> task RETRYING, scheduled_at = now + backoff of
--                          the task type's policy for this attempt number, when budget remains;
--                          task FAILED on the last allowed attempt
--               cancelled  attempt CANCELLED -> task CANCELLED
--             When tf_cancel was requested while the task ran: succeeded stays SUCCEEDED (the
--             work happened); any other outcome ends the task CANCELLED, never RETRYING.
-- Parameters: task_id, worker_id, attempt_number  as returned by tf_claim.
--             task_id and attempt_number are declared numeric (a bigint and an int in
--             fact) so that any number a caller writes gets TF400 naming it, not 42883.
--             outcome  'succeeded' | 'failed' | 'retryable' | 'cancelled'.
--             result   any JSON, at most 1 MiB as JSON text and nested at most 100 levels deep
--                      (taskforge._tf_json_too_deep; stored on success).
--             error    JSON describing the failure; a non-object becomes {"message": ...};
--                      capped at 16 KiB and flattened to text when nested more than 100
--                      levels deep (taskforge._tf_cap_error): it never makes the call fail.
--             error_text  (appended later) the failure as plain text, for callers that cannot
--                      be sure their text makes valid jsonb: stored as {"message": error_text},
--                      capped like error. Every text value is storable this way (jsonb escapes
--                      quotes and control characters), so it cannot make the call fail; only
--                      what cannot be text at all (U+0000, invalid UTF-8) is refused, before
--                      any function runs, by the server (22021) or the driver. A JSON escape
--                      such as \u0000 in error_text is kept as those six characters. Give
--                      error or error_text, not both (TF400). Ignored, like error, for
--                      succeeded. The batch forms take errors jsonb[] only.
-- Returns:    one row: accepted; the task state after the call (unchanged when refused);
--             reason NULL when accepted, else not_running | stale_attempt | not_owner | timed_out
--             | lease_expired (timed_out: the attempt's deadline has passed; recovery records it).
-- Errors:     TF400 naming the argument; TF404 no such task. Nothing is written on error.
-- Locks:      the tasks row FOR UPDATE (waits; serialises with renew, recover and cancel of the
--             same task), then its attempts row.
-- Writes:     through taskforge._tf_turn, as a batch of one: the same statement as
--             tf_finalize_many and tf_finalize_and_claim.
-- Notify:     only for a task submitted with notify_finished that this call ends (SUCCEEDED,
--             FAILED, CANCELLED): pg_notify('taskforge_finished', task_id), on commit (the row
--             trigger of taskforge._tf_notify_finished); no other NOTIFY.
-- Clock:      clock_timestamp() read after the row lock is held (a wait for the lock may
--             outlive the lease): guard, finish time and backoff start.
-- By hand:    only for a task you own (the guard makes a stale call harmless).
CREATE OR REPLACE FUNCTION taskforge.tf_finalize(
    task_id numeric,
    worker_id uuid,
    attempt_number numeric,
    outcome text,
    result jsonb DEFAULT NULL,
    error jsonb DEFAULT NULL,
    error_text text DEFAULT NULL)
RETURNS TABLE(accepted boolean, task_state text, reason text)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_id bigint;
    v_attempt_number int;
    v_error jsonb;
BEGIN
    PERFORM taskforge._tf_check_fencing(tf_finalize.task_id, tf_finalize.worker_id, tf_finalize.attempt_number);
    v_task_id := tf_finalize.task_id;                -- checked: a whole number within bigint
    v_attempt_number := tf_finalize.attempt_number;  -- checked: 1 .. 2147483647
    PERFORM taskforge._tf_check_outcome('outcome', 'result', tf_finalize.outcome, tf_finalize.result);
    IF tf_finalize.error IS NOT NULL THEN
        IF tf_finalize.error_text IS NOT NULL THEN
            PERFORM taskforge._tf_invalid('error_text', 'give error or error_text, not both');
        END IF;
        v_error := tf_finalize.error;
    ELSIF tf_finalize.error_text IS NOT NULL THEN
        v_error := jsonb_build_object('message', tf_finalize.error_text);
    END IF;

    -- Wait for the row (TF404 when there is none), then write through the batch path, whose
    -- clock is read now that the row is ours: the lock wait may have outlived the lease.
    PERFORM taskforge._tf_lock_task(v_task_id);
    RETURN QUERY
    SELECT f.accepted, f.task_state, f.reason
      FROM taskforge._tf_turn(tf_finalize.worker_id, ARRAY[v_task_id], ARRAY[v_attempt_number],
                              ARRAY[tf_finalize.outcome], ARRAY[tf_finalize.result], ARRAY[v_error],
                              '{}', NULL, clock_timestamp()) AS f;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) IS
    'Record an attempt outcome (succeeded|failed|retryable|cancelled) under the ownership guard; task and attempt change together. Stale calls return accepted=false with a reason. Ending a task submitted with notify_finished sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize(numeric, uuid, numeric, text, jsonb, jsonb, text) TO taskforge_worker;
