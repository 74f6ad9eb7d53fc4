-- taskforge._tf_sorted_at(ids bigint[], id bigint) -> int                    (private helper)
--
-- Purpose:    where a sorted array of task ids holds id, by binary search (width_bucket), so
--             that a batch statement looking each of its rows up in such an array (and in
--             arrays aligned with it) costs n log n, not n^2. A plain SQL expression, inlined by
--             the planner.
-- Parameters: ids  task ids sorted ascending, no NULL (as aggregated ORDER BY task_id).
--             id   the task id to look for.
-- Returns:    the (1-based) position of id in ids, or NULL when ids does not hold it (also for
--             an empty or NULL array); arr[NULL] is NULL, so arr[_tf_sorted_at(ids, id)] is the
--             aligned element or NULL.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_sorted_at(ids bigint[], id bigint)
RETURNS int
LANGUAGE sql
IMMUTABLE
AS $fn$
    SELECT CASE WHEN ids[pg_catalog.width_bucket(id, ids)] = id THEN pg_catalog.width_bucket(id, ids) END
$fn$;

COMMENT ON FUNCTION taskforge._tf_sorted_at(bigint[], bigint) IS
    'Private: the position of id in a sorted array of task ids (binary search), NULL when absent.';
REVOKE ALL ON FUNCTION taskforge._tf_sorted_at(bigint[], bigint) FROM PUBLIC;
