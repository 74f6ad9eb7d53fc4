-- taskforge._tf_check_outcome(outcome_argument text, result_argument text, outcome text,
--     result jsonb) -> void                                               (private helper)
--
-- Purpose:    validate one finalize outcome and its result, with the message naming the
--             argument: tf_finalize's outcome and result, or element i of a batch's outcomes
--             and results (taskforge._tf_check_batch). The rule itself, as a test that raises
--             nothing, is taskforge._tf_outcome_ok; this raises its precise error.
-- Parameters: outcome_argument, result_argument  names for the messages ('outcome',
--             'outcomes[3]', ...); outcome  succeeded | failed | retryable | cancelled;
--             result  NULL, or JSON of at most 1 MiB as text nested at most 100 levels
--             (taskforge._tf_json_too_deep).
-- Returns:    nothing.
-- Errors:     TF400 '<outcome_argument>: must be one of succeeded, failed, retryable, cancelled;
--             got <value|NULL>', '<result_argument>: must be at most 1048576 bytes as JSON text,
--             got <n>', '<result_argument>: must be nested at most 100 levels deep ...'.
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_outcome(outcome_argument text, result_argument text, outcome text,
                                                       result jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c_max_result_bytes constant int := 1048576;  -- as in taskforge._tf_outcome_ok
BEGIN
    IF outcome IS NULL OR outcome NOT IN ('succeeded', 'failed', 'retryable', 'cancelled') THEN
        PERFORM taskforge._tf_invalid(outcome_argument, format('must be one of succeeded, failed, retryable, cancelled; got %s',
            coalesce(quote_literal(left(outcome, 100)), 'NULL')));
    END IF;
    IF octet_length(result::text) > c_max_result_bytes THEN
        PERFORM taskforge._tf_invalid(result_argument, format('must be at most %s bytes as JSON text, got %s',
            c_max_result_bytes, octet_length(result::text)));
    END IF;
    IF taskforge._tf_json_too_deep(result) THEN
        PERFORM taskforge._tf_invalid(result_argument,
            'must be nested at most 100 levels deep (objects and arrays, the result itself counting as 1), got more');
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_outcome(text, text, text, jsonb) IS
    'Private: validates a finalize outcome and its result, or raises TF400 naming the given argument (tf_finalize; an element of a batch finalize).';
REVOKE ALL ON FUNCTION taskforge._tf_check_outcome(text, text, text, jsonb) FROM PUBLIC;
