-- taskforge._tf_valid_batch_of_one(worker_id uuid, task_ids numeric[], attempt_numbers numeric[],
--     outcomes text[], results jsonb[], errors jsonb[], finalize boolean) -> boolean
--                                                                          (private helper)
--
-- Purpose:    the fast path of batch validation for the commonest call, one element (a
--             one-slot worker's turn): true when the arguments are certainly valid, so the
--             caller may skip taskforge._tf_check_batch, which it calls otherwise to raise the
--             precise error. The element rules are taskforge._tf_token_ok and
--             taskforge._tf_outcome_ok, shared with _tf_check_batch; arrays may have any lower
--             bound. A plain SQL expression, inlined into the caller's IF.
-- Parameters: as _tf_check_batch.
-- Returns:    true for a valid batch of one element; false or NULL for anything else (not
--             necessarily invalid: a larger batch, which _tf_check_batch then reads).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_valid_batch_of_one(
    worker_id uuid,
    task_ids numeric[],
    attempt_numbers numeric[],
    outcomes text[],
    results jsonb[],
    errors jsonb[],
    finalize boolean)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT worker_id IS NOT NULL
       AND cardinality(task_ids) = 1 AND array_ndims(task_ids) = 1
       AND cardinality(attempt_numbers) = 1 AND array_ndims(attempt_numbers) = 1
       AND taskforge._tf_token_ok(task_ids[array_lower(task_ids, 1)],
                                  attempt_numbers[array_lower(attempt_numbers, 1)])
       AND (NOT finalize
            OR (cardinality(outcomes) = 1 AND array_ndims(outcomes) = 1
                AND (results IS NULL OR (cardinality(results) = 1 AND array_ndims(results) = 1))
                AND (errors IS NULL OR (cardinality(errors) = 1 AND array_ndims(errors) = 1))
                AND taskforge._tf_outcome_ok(outcomes[array_lower(outcomes, 1)],
                                            results[array_lower(results, 1)])))
$fn$;

COMMENT ON FUNCTION taskforge._tf_valid_batch_of_one(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean) IS
    'Private: true when a batch call holds one certainly valid element, so taskforge._tf_check_batch may be skipped.';
REVOKE ALL ON FUNCTION taskforge._tf_valid_batch_of_one(
    uuid, numeric[], numeric[], text[], jsonb[], jsonb[], boolean
) FROM PUBLIC;
