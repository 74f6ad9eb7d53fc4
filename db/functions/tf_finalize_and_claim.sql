-- taskforge.tf_finalize_and_claim(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL,
--     queues text[] DEFAULT NULL, lease_seconds double precision DEFAULT 30,
--     max_tasks numeric DEFAULT 1, task_types text[] DEFAULT NULL)
--   -> TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
--            reason text, task_type text, payload jsonb, queue text, priority int,
--            max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
--            traceparent text)
--
-- Purpose:    a worker's whole turn in one round trip and one commit: finalize the attempts it
--             just finished (exactly tf_finalize_many) and claim up to max_tasks new ones
--             (exactly tf_claim). Finishing one task and taking the next then costs one commit
--             instead of two.
-- Parameters: worker_id, task_ids, attempt_numbers, outcomes, results, errors
--                 as tf_finalize_many, except that task_ids may be empty ('{}', with
--                 attempt_numbers and outcomes empty too): then the call only claims.
--             queues, lease_seconds, task_types   as tf_claim.
--             max_tasks  whole number 0..1000: how many to claim (0 = finalize only).
-- Returns:    first one 'finalized' row per element, in input order (task_id, attempt_number,
--             accepted, task_state, reason as tf_finalize_many; the claim columns NULL), then
--             one 'claimed' row per claimed task in claim order (task_id, attempt_number,
--             task_type, payload, queue, priority, max_attempts, lease_expires_at,
--             timeout_seconds, traceparent as tf_claim;
--             accepted, task_state, reason NULL). The kind column says which.
-- Errors:     TF400 naming the argument (and element); queues, task_types and lease_seconds
--             are validated even when max_tasks = 0. TF404 unknown or deregistered worker when
--             max_tasks > 0 (with max_tasks = 0 the worker need not be registered, as for
--             tf_finalize_many). Nothing is written when an error is raised.
-- Locks:      as tf_claim (the pick), then as tf_finalize_many: SKIP LOCKED throughout, never
--             waits.
-- Writes:     the pick (taskforge._tf_claim_pick) chooses and locks the tasks to start; one
--             statement (taskforge._tf_turn) then ends the given attempts and starts the picked
--             ones. A limited queue counts the attempts this call ends as ended (the pick judges
--             them with the same guard and clock as the write), so a slot freed by this call
--             can be claimed by it.
-- Notify:     only for the tasks submitted with notify_finished that this call ends:
--             pg_notify('taskforge_finished', task_id) each, on commit (the row trigger of
--             taskforge._tf_notify_finished); claims never notify.
-- Clock:      clock_timestamp() once, after validation: guard, due test, finish time, backoff
--             start, lease start and attempt start.
-- By hand:    only as a registered worker that will renew or finalize what it takes.
CREATE OR REPLACE FUNCTION taskforge.tf_finalize_and_claim(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL,
    queues text[] DEFAULT NULL,
    lease_seconds double precision DEFAULT 30,
    max_tasks numeric DEFAULT 1,
    task_types text[] DEFAULT NULL)
RETURNS TABLE(kind text, task_id bigint, attempt_number int, accepted boolean, task_state text,
              reason text, task_type text, payload jsonb, queue text, priority int,
              max_attempts int, lease_expires_at timestamptz, timeout_seconds double precision,
              traceparent text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_finalize boolean := cardinality(tf_finalize_and_claim.task_ids) <> 0;
BEGIN
    IF NOT v_finalize THEN
        IF coalesce(cardinality(tf_finalize_and_claim.attempt_numbers), -1) <> 0 THEN
            PERFORM taskforge._tf_invalid('attempt_numbers', 'must be empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.outcomes), -1) <> 0 THEN
            PERFORM taskforge._tf_invalid('outcomes', 'must be empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.results), 0) <> 0 THEN
            PERFORM taskforge._tf_invalid('results', 'must be NULL or empty when task_ids is empty');
        END IF;
        IF coalesce(cardinality(tf_finalize_and_claim.errors), 0) <> 0 THEN
            PERFORM taskforge._tf_invalid('errors', 'must be NULL or empty when task_ids is empty');
        END IF;
        IF tf_finalize_and_claim.max_tasks IS NULL OR tf_finalize_and_claim.max_tasks NOT BETWEEN 1 AND 1000
           OR tf_finalize_and_claim.max_tasks <> trunc(tf_finalize_and_claim.max_tasks) THEN
            PERFORM taskforge._tf_check_int('max_tasks', tf_finalize_and_claim.max_tasks, 1, 1000);
        END IF;
        IF tf_finalize_and_claim.worker_id IS NULL THEN
            PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
        END IF;
    ELSE
        IF tf_finalize_and_claim.max_tasks IS NULL OR tf_finalize_and_claim.max_tasks NOT BETWEEN 0 AND 1000
           OR tf_finalize_and_claim.max_tasks <> trunc(tf_finalize_and_claim.max_tasks) THEN
            PERFORM taskforge._tf_check_int('max_tasks', tf_finalize_and_claim.max_tasks, 0, 1000);
        END IF;
        IF NOT coalesce(taskforge._tf_valid_batch_of_one(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids, tf_finalize_and_claim.attempt_numbers,
                                                   tf_finalize_and_claim.outcomes, tf_finalize_and_claim.results, tf_finalize_and_claim.errors, true), false) THEN
            -- Not a certainly valid batch of one: the full check, which raises the precise error.
            PERFORM taskforge._tf_check_batch(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids, tf_finalize_and_claim.attempt_numbers,
                                              tf_finalize_and_claim.outcomes, tf_finalize_and_claim.results, tf_finalize_and_claim.errors, true);
        END IF;
        IF tf_finalize_and_claim.max_tasks = 0 THEN
            -- _tf_claim_pick will not run, so validate its arguments here, before anything is
            -- written (a finalize-only call needs no registered worker, but valid arguments).
            PERFORM taskforge._tf_check_names('queues', tf_finalize_and_claim.queues, 'queue');
            PERFORM taskforge._tf_check_names('task_types', tf_finalize_and_claim.task_types, 'task_type');
            PERFORM taskforge._tf_check_seconds('lease_seconds', tf_finalize_and_claim.lease_seconds, 0, 86400, true);
        END IF;
    END IF;
    -- Checked: task_ids are whole numbers within bigint, attempt numbers within int. Nothing
    -- below waits for a lock, so one clock reading serves the pick and the writes.
    v_now := clock_timestamp();
    RETURN QUERY
    SELECT * FROM taskforge._tf_turn(
        tf_finalize_and_claim.worker_id, tf_finalize_and_claim.task_ids::bigint[],
        tf_finalize_and_claim.attempt_numbers::int[], tf_finalize_and_claim.outcomes,
        tf_finalize_and_claim.results, tf_finalize_and_claim.errors,
        CASE WHEN tf_finalize_and_claim.max_tasks > 0 THEN
            taskforge._tf_claim_pick(tf_finalize_and_claim.worker_id, tf_finalize_and_claim.queues,
                                     tf_finalize_and_claim.lease_seconds, tf_finalize_and_claim.max_tasks::int,
                                     tf_finalize_and_claim.task_types, v_now,
                                     CASE WHEN v_finalize THEN tf_finalize_and_claim.task_ids::bigint[] END,
                                     CASE WHEN v_finalize THEN tf_finalize_and_claim.attempt_numbers::int[] END)
        END,
        tf_finalize_and_claim.lease_seconds, v_now);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_finalize_and_claim(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]) IS
    'A worker turn in one commit: tf_finalize_many of the given attempts, then tf_claim of up to max_tasks (0..1000). Rows: kind finalized (input order) then kind claimed (claim order), traceparent last. A task submitted with notify_finished that it ends sends NOTIFY taskforge_finished. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_finalize_and_claim(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_finalize_and_claim(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[]
) TO taskforge_worker;
