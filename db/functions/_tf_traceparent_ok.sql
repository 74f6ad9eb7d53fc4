-- taskforge._tf_traceparent_ok(value text) -> boolean                  (private helper)
--
-- Purpose:    the one home of the trace context rule: a W3C Trace Context `traceparent` header
--             value (https://www.w3.org/TR/trace-context/#traceparent-header) as tf_submit
--             stores it, version-trace_id-parent_id-flags in lower-case hex,
--               ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$
--             e.g. '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', where the
--             version is not 'ff' and neither the trace id nor the parent (span) id is all
--             zeros (the invalid values of the specification). Used by the validation of
--             tf_submit and tf_submit_many (taskforge._tf_submit_one) and by the domain
--             taskforge.traceparent of tasks.traceparent (db/schema/50_name_rules.sql).
--             A plain SQL expression, inlined by the planner into its callers.
-- Parameters: value  the header value, or NULL.
-- Returns:    true when valid, false when not, NULL for NULL.
-- Errors:     none (the validator raises; this only tests).
-- Locks:      none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_traceparent_ok(value text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
-- No SET clause: inlined into the validator and the domain constraint.
AS $fn$
    SELECT value ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       AND left(value, 2) <> 'ff'
       AND substr(value, 4, 32) <> '00000000000000000000000000000000'
       AND substr(value, 37, 16) <> '0000000000000000'
$fn$;

COMMENT ON FUNCTION taskforge._tf_traceparent_ok(text) IS
    'Private: true when a text is a valid W3C traceparent (lower-case hex vv-trace_id-parent_id-flags, version not ff, ids not all zeros).';
REVOKE ALL ON FUNCTION taskforge._tf_traceparent_ok(text) FROM PUBLIC;
