-- taskforge._tf_check_batch(worker_id uuid, task_ids numeric[], attempt_numbers numeric[]) -> void
--                                                                       (private helper)
--
-- Purpose:    validate the element-aligned fencing tokens of the batch functions (tf_renew_many
--             and the batch finalize _tf_finalize_attempts), before anything is locked or
--             written. Element i is (task_ids[i], attempt_numbers[i]).
-- Parameters: worker_id        must not be NULL.
--             task_ids         a one-dimensional array of 1..1000 task ids, each a whole
--                              number within bigint (taskforge._tf_check_task_id), no task
--                              twice (one call holds one answer per task).
--             attempt_numbers  a one-dimensional array of the same length, each a whole number
--                              from 1 to 2147483647 (taskforge._tf_check_int).
--             Both are numeric[], as the public batch functions declare them, so that any
--             number reaches this check; callers convert them to bigint[] and int[] after it.
-- Returns:    nothing.
-- Errors:     TF400 naming the argument, and for an element its position ('task_ids[3]' is
--             the third element, whatever the array's lower bound); the
--             array shapes first, then the first bad element, then the first repeated task.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_batch(worker_id uuid, task_ids numeric[], attempt_numbers numeric[])
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises (see _tf_invalid)
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_n int := cardinality(task_ids);
    v_bad_ord bigint;
    v_bad_task_id numeric;
    v_bad_attempt numeric;
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
    -- Elements are named by their position (1-based), whatever the arrays' lower bounds, and
    -- checked as read here (not looked up again by subscript: '[2:3]={...}' has no element 1).
    SELECT r.ord, r.task_id, r.attempt_number INTO v_bad_ord, v_bad_task_id, v_bad_attempt
      FROM unnest(task_ids, attempt_numbers) WITH ORDINALITY AS r(task_id, attempt_number, ord)
     WHERE r.task_id IS NULL OR r.task_id NOT BETWEEN -9223372036854775808 AND 9223372036854775807
        OR r.task_id <> trunc(r.task_id)
        OR r.attempt_number IS NULL OR r.attempt_number NOT BETWEEN 1 AND 2147483647
        OR r.attempt_number <> trunc(r.attempt_number)
     ORDER BY r.ord
     LIMIT 1;
    IF v_bad_ord IS NOT NULL THEN
        -- Whichever of the two is bad raises, the task id first.
        PERFORM taskforge._tf_check_task_id(format('task_ids[%s]', v_bad_ord), v_bad_task_id);
        PERFORM taskforge._tf_check_int(format('attempt_numbers[%s]', v_bad_ord), v_bad_attempt, 1, 2147483647);
    END IF;
    IF v_n > 1 THEN
        SELECT r.ord, r.task_id INTO v_bad_ord, v_bad_task_id
          FROM (SELECT u.ord, u.task_id, row_number() OVER (PARTITION BY u.task_id ORDER BY u.ord) AS seen
                  FROM unnest(task_ids) WITH ORDINALITY AS u(task_id, ord)) r
         WHERE r.seen > 1
         ORDER BY r.ord
         LIMIT 1;
        IF v_bad_ord IS NOT NULL THEN
            PERFORM taskforge._tf_invalid(format('task_ids[%s]', v_bad_ord),
                format('task %s appears more than once in one call', v_bad_task_id));
        END IF;
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_batch(uuid, numeric[], numeric[]) IS
    'Private: validates worker_id and the element-aligned task_ids/attempt_numbers of the batch functions, or raises TF400 naming the argument and element.';
REVOKE ALL ON FUNCTION taskforge._tf_check_batch(uuid, numeric[], numeric[]) FROM PUBLIC;
