-- taskforge._tf_check_batch(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[] DEFAULT NULL, results jsonb[] DEFAULT NULL, errors jsonb[] DEFAULT NULL,
--     finalize boolean DEFAULT false) -> void                               (private helper)
--
-- Purpose:    validate the element-aligned arguments of the batch functions (tf_renew_many,
--             tf_finalize_many, tf_finalize_and_claim), before anything is locked or written.
--             Element i is (task_ids[i], attempt_numbers[i]) and, when finalize is true,
--             outcomes[i], results[i], errors[i].
-- Parameters: worker_id        must not be NULL.
--             task_ids         a one-dimensional array of 1..1000 task ids, each a whole
--                              number within bigint (taskforge._tf_check_task_id), no task
--                              twice (one call holds one answer per task).
--             attempt_numbers  a one-dimensional array of the same length, each a whole number
--                              from 1 to 2147483647 (taskforge._tf_check_int).
--             Both are numeric[], as the public batch functions declare them, so that any
--             number reaches this check; callers convert them to bigint[] and int[] after it.
--             Element rule: taskforge._tf_token_ok.
--             finalize         true for the finalize functions: then outcomes is a
--                              one-dimensional array of the same length, each succeeded |
--                              failed | retryable | cancelled; results and errors are NULL or
--                              such arrays; each result at most 1 MiB as JSON text and nested
--                              at most 100 levels deep (element rule: taskforge._tf_outcome_ok).
--                              Errors are not checked: any error is storable
--                              (taskforge._tf_cap_error).
-- Returns:    nothing.
-- Errors:     TF400 naming the argument, and for an element its position ('task_ids[3]' is
--             the third element, whatever the array's lower bound), in this order: the shapes
--             of task_ids and attempt_numbers, their first bad element, the first repeated
--             task, the shapes of outcomes, results and errors, the first bad outcome or result.
-- Plans:      the elements are read in one pass (one statement) whatever their number, a
--             second counts distinct tasks when there are several; the messages are built only
--             when something is wrong. A caller may skip this check for a certainly valid batch
--             of one (taskforge._tf_valid_batch_of_one, which applies the same element rules).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_batch(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[] DEFAULT NULL,
    results jsonb[] DEFAULT NULL,
    errors jsonb[] DEFAULT NULL,
    finalize boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_n int := cardinality(task_ids);
    v_bad_token bigint;
    v_bad_finalize bigint;
    v_distinct bigint;
    v_bad_ord bigint;
    v_bad_task_id numeric;
    v_bad_attempt numeric;
    v_bad_outcome text;
    v_bad_result jsonb;
BEGIN
    IF worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    IF v_n IS NULL OR v_n NOT BETWEEN 1 AND 1000 OR array_ndims(task_ids) <> 1 THEN
        PERFORM taskforge._tf_invalid('task_ids', format('must be a one-dimensional array of 1 to 1000 elements, got %s',
            coalesce(v_n::text, 'NULL')));
    END IF;
    IF cardinality(attempt_numbers) IS DISTINCT FROM v_n OR array_ndims(attempt_numbers) <> 1 THEN
        PERFORM taskforge._tf_invalid('attempt_numbers', format(
            'must be a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, coalesce(cardinality(attempt_numbers)::text, 'NULL')));
    END IF;
    IF finalize THEN
        -- Shapes only here; the elements are read below, in the same pass as the tokens.
        IF cardinality(outcomes) IS DISTINCT FROM v_n OR array_ndims(outcomes) <> 1 THEN
            v_bad_finalize := -1;
        ELSIF results IS NOT NULL AND (cardinality(results) <> v_n OR array_ndims(results) <> 1) THEN
            v_bad_finalize := -2;
        ELSIF errors IS NOT NULL AND (cardinality(errors) <> v_n OR array_ndims(errors) <> 1) THEN
            v_bad_finalize := -3;
        END IF;
    END IF;

    -- One pass over the elements: the first bad token (taskforge._tf_token_ok) and the first
    -- bad outcome or result (taskforge._tf_outcome_ok); then, for several, whether a task repeats. Elements are named by their position (1-based), whatever the
    -- arrays' lower bounds, and checked as read (not looked up again by subscript: '[2:3]={...}'
    -- has no element 1).
    SELECT min(r.ord) FILTER (WHERE NOT coalesce(taskforge._tf_token_ok(r.task_id, r.attempt_number), false)),
           CASE WHEN finalize AND v_bad_finalize IS NULL THEN
               min(r.ord) FILTER (WHERE NOT coalesce(taskforge._tf_outcome_ok(r.outcome, r.result), false))
           END
      INTO v_bad_token, v_bad_ord
      FROM unnest(task_ids, attempt_numbers,
                  CASE WHEN finalize AND v_bad_finalize IS NULL THEN outcomes END,
                  CASE WHEN finalize AND v_bad_finalize IS NULL THEN results END)
           WITH ORDINALITY AS r(task_id, attempt_number, outcome, result, ord);
    IF v_n > 1 AND v_bad_token IS NULL THEN
        SELECT count(DISTINCT u.task_id) INTO v_distinct FROM unnest(task_ids) AS u(task_id);
    END IF;

    IF v_bad_token IS NOT NULL THEN
        SELECT r.task_id, r.attempt_number INTO v_bad_task_id, v_bad_attempt
          FROM unnest(task_ids, attempt_numbers) WITH ORDINALITY AS r(task_id, attempt_number, ord)
         WHERE r.ord = v_bad_token;
        -- Whichever of the two is bad raises, the task id first.
        PERFORM taskforge._tf_check_task_id(format('task_ids[%s]', v_bad_token), v_bad_task_id);
        PERFORM taskforge._tf_check_int(format('attempt_numbers[%s]', v_bad_token), v_bad_attempt, 1, 2147483647);
    END IF;
    IF v_distinct < v_n THEN
        SELECT r.ord, r.task_id INTO v_bad_ord, v_bad_task_id
          FROM (SELECT u.ord, u.task_id, row_number() OVER (PARTITION BY u.task_id ORDER BY u.ord) AS seen
                  FROM unnest(task_ids) WITH ORDINALITY AS u(task_id, ord)) r
         WHERE r.seen > 1
         ORDER BY r.ord
         LIMIT 1;
        PERFORM taskforge._tf_invalid(format('task_ids[%s]', v_bad_ord),
            format('task %s appears more than once in one call', v_bad_task_id));
    END IF;
    IF v_bad_finalize = -1 THEN
        PERFORM taskforge._tf_invalid('outcomes', format('must be a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, coalesce(cardinality(outcomes)::text, 'NULL')));
    ELSIF v_bad_finalize = -2 THEN
        PERFORM taskforge._tf_invalid('results', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(results)));
    ELSIF v_bad_finalize = -3 THEN
        PERFORM taskforge._tf_invalid('errors', format('must be NULL or a one-dimensional array with as many elements as task_ids (%s), got %s',
            v_n, cardinality(errors)));
    END IF;
    IF v_bad_ord IS NOT NULL THEN
        SELECT r.outcome, r.result INTO v_bad_outcome, v_bad_result
          FROM unnest(outcomes, results) WITH ORDINALITY AS r(outcome, result, ord)
         WHERE r.ord = v_bad_ord;
        PERFORM taskforge._tf_check_outcome(format('outcomes[%s]', v_bad_ord), format('results[%s]', v_bad_ord),
                                            v_bad_outcome, v_bad_result);
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_batch(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean) IS
    'Private: validates worker_id and the element-aligned arrays of the batch functions (task_ids, attempt_numbers; with finalize also outcomes, results, errors), or raises TF400 naming the argument and element.';
REVOKE ALL ON FUNCTION taskforge._tf_check_batch(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean
) FROM PUBLIC;
