-- taskforge._tf_finalize_attempts(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[], errors jsonb[])
--   -> TABLE(ordinality int, task_id bigint, attempt_number int, accepted boolean,
--            task_state text, reason text)                              (private helper)
--
-- Purpose:    the batch finalize shared by tf_finalize_many and tf_finalize_and_claim: record
--             how many attempts of one worker ended, in one set-based pass, with tf_finalize's
--             guard and outcome rules applied per element (taskforge._tf_guard,
--             _tf_task_state_after, _tf_attempt_state_after; backoff from the task type's
--             policy). Element i is (task_ids[i], attempt_numbers[i], outcomes[i], results[i],
--             errors[i]).
-- Parameters: worker_id        the worker that owns the attempts (NULL is TF400).
--             task_ids         1..1000 task ids (whole numbers within bigint), no NULL, no repeats.
--             attempt_numbers  as many attempt numbers (whole numbers 1..2147483647).
--             Both arrays are numeric[] (see tf_finalize_many); converted once checked.
--             outcomes         text[] of the same length: succeeded | failed | retryable | cancelled.
--             results          jsonb[] of the same length, or NULL (no results); each at most
--                              1 MiB as JSON text and nested at most 100 levels deep
--                              (taskforge._tf_json_too_deep); stored for succeeded elements only.
--             errors           jsonb[] of the same length, or NULL; capped like tf_finalize's
--                              (taskforge._tf_cap_error); stored for other outcomes.
-- Returns:    one row per element, in input order (ordinality = i): accepted, the task state
--             after the call (unchanged, as last committed, when refused), and reason NULL when
--             accepted, else
--               busy           another transaction holds the task's row: nothing was done and
--                              nothing waited for; send the element again later
--               not_found      no such task
--               not_running | stale_attempt | not_owner | timed_out | lease_expired   as in tf_finalize.
-- Errors:     TF400 naming the argument and element, e.g. 'outcomes[3]: ...'. Nothing is
--             written when an error is raised.
-- Locks:      FOR UPDATE SKIP LOCKED on the named tasks rows (never waits), then their attempt rows.
-- Plans:      one cached generic plan per statement; every row is reached by primary key
--             (nested loops over the input arrays), pinned with SET enable_seqscan/hashjoin/
--             mergejoin = off so that a plan cached before a table's first ANALYZE cannot
--             scan whole tables (jit = off: those settings inflate plan costs past jit_above_cost).
-- Clock:      clock_timestamp() read once the rows are locked: guard, finish time, backoff start.
-- By hand:    use tf_finalize_many.
CREATE OR REPLACE FUNCTION taskforge._tf_finalize_attempts(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[],
    errors jsonb[])
RETURNS TABLE(ordinality int, task_id bigint, attempt_number int, accepted boolean, task_state text,
              reason text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_task_ids bigint[];
    v_attempt_numbers int[];
    c_max_result_bytes constant int := 1048576;
    v_n int := cardinality(_tf_finalize_attempts.task_ids);
    v_now timestamptz;
    v_locked bigint[];
    v_bad_ord bigint;
    v_bad_arg text;
    v_bad_problem text;
BEGIN
    PERFORM taskforge._tf_check_batch(_tf_finalize_attempts.worker_id, _tf_finalize_attempts.task_ids,
                                      _tf_finalize_attempts.attempt_numbers);
    v_task_ids := _tf_finalize_attempts.task_ids;                -- checked: whole numbers within bigint
    v_attempt_numbers := _tf_finalize_attempts.attempt_numbers;  -- checked: 1 .. 2147483647
    IF cardinality(_tf_finalize_attempts.outcomes) IS DISTINCT FROM v_n
       OR array_ndims(_tf_finalize_attempts.outcomes) <> 1 THEN
        PERFORM taskforge._tf_invalid('outcomes', format('must be a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, coalesce(cardinality(_tf_finalize_attempts.outcomes)::text, 'NULL')));
    END IF;
    IF _tf_finalize_attempts.results IS NOT NULL
       AND (cardinality(_tf_finalize_attempts.results) <> v_n OR array_ndims(_tf_finalize_attempts.results) <> 1) THEN
        PERFORM taskforge._tf_invalid('results', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(_tf_finalize_attempts.results)));
    END IF;
    IF _tf_finalize_attempts.errors IS NOT NULL
       AND (cardinality(_tf_finalize_attempts.errors) <> v_n OR array_ndims(_tf_finalize_attempts.errors) <> 1) THEN
        PERFORM taskforge._tf_invalid('errors', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(_tf_finalize_attempts.errors)));
    END IF;

    -- The first bad outcome or result, if any, in one pass.
    SELECT r.ord,
           CASE WHEN r.outcome IS NULL OR r.outcome NOT IN ('succeeded', 'failed', 'retryable', 'cancelled')
                THEN 'outcomes' ELSE 'results' END,
           CASE WHEN r.outcome IS NULL OR r.outcome NOT IN ('succeeded', 'failed', 'retryable', 'cancelled') THEN
                    format('must be one of succeeded, failed, retryable, cancelled; got %s',
                           coalesce(quote_literal(left(r.outcome, 100)), 'NULL'))
                WHEN octet_length(r.result::text) > c_max_result_bytes THEN
                    format('must be at most %s bytes as JSON text, got %s', c_max_result_bytes,
                           octet_length(r.result::text))
                ELSE 'must be nested at most 100 levels deep (objects and arrays, the result itself counting as 1), got more' END
      INTO v_bad_ord, v_bad_arg, v_bad_problem
      FROM unnest(_tf_finalize_attempts.outcomes, _tf_finalize_attempts.results)
           WITH ORDINALITY AS r(outcome, result, ord)
     WHERE r.outcome IS NULL OR r.outcome NOT IN ('succeeded', 'failed', 'retryable', 'cancelled')
        OR octet_length(r.result::text) > c_max_result_bytes
        OR taskforge._tf_json_too_deep(r.result)
     ORDER BY r.ord
     LIMIT 1;
    IF v_bad_ord IS NOT NULL THEN
        PERFORM taskforge._tf_invalid(format('%s[%s]', v_bad_arg, v_bad_ord), v_bad_problem);
    END IF;

    -- Lock what is free; a row another transaction holds is reported busy, never waited for.
    v_locked := ARRAY(SELECT t.task_id FROM taskforge.tasks t
                       WHERE t.task_id = ANY (v_task_ids)
                       ORDER BY t.task_id
                         FOR UPDATE SKIP LOCKED);
    v_now := clock_timestamp();

    RETURN QUERY
    WITH req AS (
        SELECT r.ord, r.task_id, r.attempt_number, r.outcome, r.result, r.error
          FROM unnest(v_task_ids, v_attempt_numbers,
                      _tf_finalize_attempts.outcomes, _tf_finalize_attempts.results,
                      _tf_finalize_attempts.errors)
               WITH ORDINALITY AS r(task_id, attempt_number, outcome, result, error, ord)
    ), judged AS (
        SELECT req.ord, req.task_id, req.attempt_number, req.outcome, req.result,
               t.state AS old_state, t.task_type,
               taskforge._tf_guard_batch(t, v_locked, _tf_finalize_attempts.worker_id, req.attempt_number,
                                          v_now) AS reason,
               taskforge._tf_task_state_after(req.outcome, t.cancel_requested_at IS NOT NULL,
                                              t.attempt_count, t.max_attempts) AS new_state,
               CASE WHEN req.outcome <> 'succeeded' THEN taskforge._tf_cap_error(req.error) END AS error
          FROM req
          LEFT JOIN taskforge.tasks t ON t.task_id = req.task_id
    ), ended AS (
        UPDATE taskforge.attempts a
           SET state = taskforge._tf_attempt_state_after(j.outcome),
               outcome = j.outcome,
               finished_at = v_now,
               result = CASE WHEN j.outcome = 'succeeded' THEN j.result END,
               error = j.error
          FROM judged j
         WHERE j.reason IS NULL
           AND a.task_id = j.task_id AND a.attempt_number = j.attempt_number AND a.state = 'RUNNING'
        RETURNING a.task_id
    ), moved AS (
        UPDATE taskforge.tasks t
           SET state = j.new_state,
               owner_worker_id = NULL,
               lease_expires_at = NULL,
               deadline_at = NULL,
               scheduled_at = CASE WHEN j.new_state = 'RETRYING'
                                   THEN v_now + make_interval(secs => taskforge.tf_backoff(
                                            j.attempt_number, tt.backoff_base_seconds,
                                            tt.backoff_cap_seconds, tt.backoff_jitter))
                                   ELSE t.scheduled_at END,
               result = CASE WHEN j.outcome = 'succeeded' THEN j.result ELSE t.result END,
               last_error = CASE WHEN j.outcome = 'succeeded' THEN t.last_error ELSE j.error END,
               finished_at = CASE WHEN j.new_state = 'RETRYING' THEN NULL ELSE v_now END,
               updated_at = v_now
          FROM judged j
          JOIN ended e ON e.task_id = j.task_id
          JOIN taskforge.task_types tt ON tt.task_type = j.task_type
         WHERE t.task_id = j.task_id
        RETURNING t.task_id
    )
    SELECT j.ord::int, j.task_id, j.attempt_number, m.task_id IS NOT NULL,
           CASE WHEN m.task_id IS NOT NULL THEN j.new_state ELSE j.old_state END,
           CASE WHEN j.reason IS NULL AND m.task_id IS NULL
                -- The guard held but the attempt row was not RUNNING: a broken invariant.
                THEN taskforge._tf_broken_invariant(format(
                    'task %s is RUNNING under attempt %s but that attempt row is not RUNNING (see tf_invariant_violations)',
                    j.task_id, j.attempt_number))
                ELSE j.reason END
      FROM judged j
      LEFT JOIN moved m ON m.task_id = j.task_id
     ORDER BY j.ord;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_finalize_attempts(uuid, numeric[], numeric[], text[], jsonb[], jsonb[]) IS
    'Private: set-based finalize of many attempts of one worker (SKIP LOCKED: locked rows are reported busy); one result row per element in input order.';
REVOKE ALL ON FUNCTION taskforge._tf_finalize_attempts(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[]
) FROM PUBLIC;
