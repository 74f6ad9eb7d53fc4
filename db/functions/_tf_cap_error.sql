-- taskforge._tf_cap_error(error jsonb) -> jsonb                      (private helper)
--
-- Purpose:    make a worker-reported error safe and bounded before it is stored on the task
--             and the attempt. A non-object value becomes {"message": value}. When the JSON text
--             is longer than 16 KiB, every string member is cut to 4,000 characters (marked with
--             "truncated": true); if it is still too long, only {"type", "message" (4,000
--             characters), "truncated": true} is kept. jsonb cannot hold NUL characters or
--             unpaired surrogates, so a value that reached this function is already storable;
--             clients strip them before encoding (the Python worker does).
-- Returns:    jsonb object, or NULL for NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cap_error(error jsonb)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c_max_bytes constant int := 16384;
    c_max_chars constant int := 4000;
    v_error jsonb := error;
BEGIN
    IF v_error IS NULL OR v_error = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v_error) <> 'object' THEN
        v_error := jsonb_build_object('message', v_error);
    END IF;
    IF octet_length(v_error::text) <= c_max_bytes THEN
        RETURN v_error;
    END IF;
    SELECT jsonb_object_agg(key,
               CASE WHEN jsonb_typeof(value) = 'string' AND length(value #>> '{}') > c_max_chars
                    THEN to_jsonb(left(value #>> '{}', c_max_chars))
                    ELSE value END)
           || jsonb_build_object('truncated', true)
      INTO v_error
      FROM jsonb_each(v_error);
    IF octet_length(v_error::text) <= c_max_bytes THEN
        RETURN v_error;
    END IF;
    RETURN jsonb_build_object(
        'type', left(coalesce(v_error ->> 'type', 'error'), 200),
        'message', left(coalesce(v_error ->> 'message', v_error::text), c_max_chars),
        'truncated', true);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cap_error(jsonb) IS
    'Private: wraps a non-object error as {"message": ...} and caps its size at 16 KiB (strings cut to 4,000 characters).';
REVOKE ALL ON FUNCTION taskforge._tf_cap_error(jsonb) FROM PUBLIC;
