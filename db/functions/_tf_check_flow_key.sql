-- taskforge._tf_check_flow_key(argument text, value text, nullable boolean DEFAULT true) -> void
--                                                                        (private helper)
--
-- Purpose:    the one home of the flow-key rule (the domain taskforge.flow_key: 1..200
--             characters) as a TF400 naming the argument, for tf_submit's rate_key,
--             concurrency_key and ordering_key (taskforge._tf_submit_one) and the keys of
--             tf_set_rate_limit and tf_set_concurrency_limit.
-- Parameters: argument  the name to report ('rate_key', 'requests[3].ordering_key').
--             value     the key.
--             nullable  true: NULL passes (no key); false: NULL is refused.
-- Returns:    nothing.
-- Errors:     TF400 '<argument>: must be 1 to 200 characters, got N' (or 'got NULL').
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_check_flow_key(argument text, value text, nullable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql
VOLATILE  -- it raises through _tf_invalid, which must never be folded at plan time
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF (value IS NULL AND NOT nullable) OR length(value) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid(argument, format('must be 1 to 200 characters, got %s',
            coalesce(length(value)::text, 'NULL')));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_check_flow_key(text, text, boolean) IS
    'Private: validates a rate, concurrency or ordering key (1..200 characters; NULL when nullable) or raises TF400 naming the argument.';
REVOKE ALL ON FUNCTION taskforge._tf_check_flow_key(text, text, boolean) FROM PUBLIC;
