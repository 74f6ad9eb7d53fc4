-- taskforge._tf_cap_error(error jsonb) -> jsonb                      (private helper)
--
-- Purpose:    make a worker-reported error safe and bounded before it is stored on the task
--             and the attempt. A non-object value becomes {"message": value}. When the JSON text
--             is longer than 16 KiB, every string member is cut to 4,000 characters (marked with
--             "truncated": true); if it is still too long, only {"type", "message" (4,000
--             characters, fewer if escaping makes the JSON text longer than 16 KiB),
--             "truncated": true} is kept, so the stored JSON text never exceeds 16 KiB.
--             An error nested more than 100 levels deep (taskforge._tf_json_too_deep) becomes
--             {"type", "message": its JSON text cut to 4,000 characters, "truncated": true}.
--             jsonb cannot hold NUL characters or
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
    v_type text;
    v_message text;
    v_chars int;
BEGIN
    IF v_error IS NULL OR v_error = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v_error) <> 'object' THEN
        v_error := jsonb_build_object('message', v_error);
    END IF;
    -- Too deep to hand out (taskforge._tf_json_too_deep): keep its text, not its structure.
    IF taskforge._tf_json_too_deep(v_error) THEN
        v_error := jsonb_build_object('type', coalesce(left(v_error ->> 'type', 200), 'error'),
                                      'message', left(v_error::text, c_max_chars), 'truncated', true);
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
    -- Last resort: type and message only, halving the cut until the JSON text (where escaping
    -- can make one character six bytes) fits.
    v_type := coalesce(v_error ->> 'type', 'error');
    v_message := coalesce(v_error ->> 'message', v_error::text);
    v_chars := c_max_chars;
    LOOP
        v_error := jsonb_build_object('type', left(v_type, least(v_chars, 200)),
                                      'message', left(v_message, v_chars), 'truncated', true);
        EXIT WHEN octet_length(v_error::text) <= c_max_bytes OR v_chars = 0;
        v_chars := v_chars / 2;
    END LOOP;
    RETURN v_error;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cap_error(jsonb) IS
    'Private: wraps a non-object error as {"message": ...} and caps its size at 16 KiB (strings cut to 4,000 characters).';
REVOKE ALL ON FUNCTION taskforge._tf_cap_error(jsonb) FROM PUBLIC;
