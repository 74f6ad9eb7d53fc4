-- taskforge._tf_json_too_deep(value jsonb) -> boolean                  (private helper)
--
-- Purpose:    the one home of the JSON nesting limit: is value nested more than 100 levels
--             deep (objects and arrays; value itself is level 1, so {"a": [1]} is 2 deep)?
--             Clients decode JSON recursively (Python's json stops near 1,000 levels, and a
--             handler or page that walks the value needs stack of its own), so what TaskForge
--             stores and hands out stays well inside that: task payloads (tf_submit refuses
--             deeper ones), attempt results (tf_finalize and the batch forms refuse them) and
--             errors (taskforge._tf_cap_error flattens them to text).
--             jsonpath's .**{100} walks at most 100 levels down (no deeper recursion) and
--             costs well under a microsecond for small values; strict mode, because lax would
--             unwrap arrays in the filter. Callers' messages say "at most 100 levels deep";
--             db/tests/_tf_json_too_deep pins 100 accepted and 101 refused for each of them.
-- Parameters: value  any jsonb.
-- Returns:    true when too deep; false otherwise; NULL for NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined into the calling expression (see the note at LANGUAGE sql below).
CREATE OR REPLACE FUNCTION taskforge._tf_json_too_deep(value jsonb)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines a plain SQL expression function into the calling query
-- (a SET clause would prevent that). It uses only a built-in function, schema-qualified, and
-- every caller is a taskforge function whose search_path is pinned to pg_catalog, pg_temp.
AS $fn$
    SELECT pg_catalog.jsonb_path_exists(value, 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")')
$fn$;

COMMENT ON FUNCTION taskforge._tf_json_too_deep(jsonb) IS
    'Private: true when a JSON value is nested more than 100 levels deep (the limit for payloads, results and errors).';
REVOKE ALL ON FUNCTION taskforge._tf_json_too_deep(jsonb) FROM PUBLIC;
