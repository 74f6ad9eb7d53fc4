-- taskforge._tf_fingerprint(task_type text, payload jsonb, queue text, priority int,
--                           max_attempts int, scheduled_at timestamptz,
--                           timeout_seconds double precision DEFAULT NULL,
--                           delay_seconds double precision DEFAULT NULL,
--                           flow jsonb DEFAULT NULL) -> bytea
--                                                                        (private helper)
--
-- Purpose:    the idempotency fingerprint of a submit request: SHA-256 over a canonical form.
--             Canonical form: the jsonb array
--               ["tf1", task_type, payload, queue, priority, max_attempts, scheduled_at_utc]
--             printed by jsonb's own output function, which sorts object keys and drops
--             insignificant white space, so key order and formatting of the payload do not
--             matter while any difference in a value does. scheduled_at is written as
--             'YYYY-MM-DD"T"HH24:MI:SS.US"Z" AD' (or BC) in UTC, so the session TimeZone never
--             changes the fingerprint and years before 1 AD stay distinct; a NULL schedule stays
--             JSON null (it does not become "now"). A per-task timeout_seconds, when given, is
--             appended as an eighth element (a JSON number); without one the array, and so every
--             fingerprint computed before that parameter existed, is unchanged. A delay_seconds,
--             when given, is appended as a ninth element (the eighth is then the timeout or JSON
--             null): the delay as the caller gave it, not the instant it yields, so a replay of
--             a delayed submit later has the same fingerprint. A request with a delay has a NULL
--             scheduled_at (tf_submit refuses both), and 9 elements never equal 7 or 8.
--             flow, when not NULL, is appended last as a JSON object (never a number or null,
--             so it cannot be mistaken for the elements before it): the request's dependencies
--             and flow-control keys, {"depends_on": [parent ids, sorted, distinct],
--             "rate_key": ..., "concurrency_key": ..., "ordering_key": ...} with only the keys
--             given (built by taskforge._tf_submit_one); a request with none is unchanged.
-- Returns:    32 bytes.
-- Errors:     none (callers validate first).  Locks: none.
-- Clock:      none; the result depends on its arguments only (IMMUTABLE).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_fingerprint(
    task_type text, payload jsonb, queue text, priority int, max_attempts int, scheduled_at timestamptz,
    timeout_seconds double precision DEFAULT NULL, delay_seconds double precision DEFAULT NULL,
    flow jsonb DEFAULT NULL)
RETURNS bytea
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN sha256(convert_to(
        (jsonb_build_array(
            'tf1', task_type, payload, queue, priority, max_attempts,
            to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z" BC')
        ) || CASE WHEN delay_seconds IS NOT NULL THEN jsonb_build_array(timeout_seconds, delay_seconds)
                  WHEN timeout_seconds IS NOT NULL THEN jsonb_build_array(timeout_seconds)
                  ELSE '[]'::jsonb END
          || CASE WHEN flow IS NOT NULL THEN jsonb_build_array(flow) ELSE '[]'::jsonb END)::text,
        'UTF8'));
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_fingerprint(text, jsonb, text, int, int, timestamptz, double precision, double precision, jsonb) IS
    'Private: SHA-256 of the canonical submit request (key order free, schedule in UTC, NULL schedule kept NULL, a delay as given, dependencies and flow keys when given).';
REVOKE ALL ON FUNCTION taskforge._tf_fingerprint(
    text, jsonb, text, int, int, timestamptz, double precision, double precision, jsonb
) FROM PUBLIC;
