-- taskforge._tf_maintenance_failed(sweep text, subject text, sqlstate text, message text,
--                                  now timestamptz) -> timestamptz            (private helper)
--
-- Purpose:    record that a maintenance sweep could not process one row (its row-by-row fallback
--             caught the error in the row's own subtransaction), in taskforge.maintenance_errors
--             (read through tf_maintenance_errors): a first failure inserts the entry, a later one
--             updates the error, counts it and moves last_seen_at. The sweep leaves the row out
--             until retry_after = now + 60 s x 2^(failures - 1), at most 1 hour (60 s, 2 min,
--             4 min, ... 1 h): a row that keeps failing costs one subtransaction per retry, not
--             a failed set-based statement and a fallback on every pass.
--             A new error (no entry yet, or another SQLSTATE or message than the recorded one)
--             raises a WARNING (SQLSTATE 01000), which the scheduler logs: once per new error,
--             not on every failure.
-- Parameters: sweep    'tf_recover', 'tf_promote', 'tf_enqueue_periodic' or 'tf_prune'.
--             subject  the row: a task id in decimal, or the schedule name (tf_enqueue_periodic).
--             sqlstate, message  the caught error (message capped at 1000 characters).
--             now      the sweep's clock (clock_timestamp() read once at its entry).
-- Returns:    retry_after.
-- Errors:     23514 from the table's CHECKs for a sweep or subject outside the above (a caller bug).
-- Locks:      the entry's row (upsert on the primary key).
-- Clock:      the caller's now.
-- By hand:    it makes the sweep skip the row until retry_after; delete the entry to undo.
CREATE OR REPLACE FUNCTION taskforge._tf_maintenance_failed(
    sweep text, subject text, sqlstate text, message text, now timestamptz
)
RETURNS timestamptz
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_message text := left(coalesce(_tf_maintenance_failed.message, ''), 1000);
    v_old taskforge.maintenance_errors%ROWTYPE;
    v_failures int;
    v_retry_after timestamptz;
BEGIN
    SELECT * INTO v_old FROM taskforge.maintenance_errors e
     WHERE e.sweep = _tf_maintenance_failed.sweep AND e.subject = _tf_maintenance_failed.subject
       FOR UPDATE;
    v_failures := coalesce(v_old.failures, 0) + 1;
    v_retry_after := _tf_maintenance_failed.now
        + make_interval(secs => least(3600, 60 * power(2, least(v_failures, 7) - 1)));

    INSERT INTO taskforge.maintenance_errors AS e
           (sweep, subject, sqlstate, message, failures, first_seen_at, last_seen_at, retry_after)
    VALUES (_tf_maintenance_failed.sweep, _tf_maintenance_failed.subject, _tf_maintenance_failed.sqlstate,
            v_message, 1, _tf_maintenance_failed.now, _tf_maintenance_failed.now, v_retry_after)
    ON CONFLICT (sweep, subject) DO UPDATE
       SET sqlstate = excluded.sqlstate, message = excluded.message, failures = e.failures + 1,
           last_seen_at = greatest(e.last_seen_at, excluded.last_seen_at),
           retry_after = greatest(e.retry_after, excluded.retry_after)
    RETURNING e.retry_after INTO v_retry_after;

    IF v_old.sweep IS NULL OR v_old.sqlstate IS DISTINCT FROM _tf_maintenance_failed.sqlstate
       OR v_old.message IS DISTINCT FROM v_message THEN
        RAISE WARNING USING
            MESSAGE = format('taskforge: %s skipped %s: %s (SQLSTATE %s)', _tf_maintenance_failed.sweep,
                             CASE WHEN _tf_maintenance_failed.sweep = 'tf_enqueue_periodic'
                                  THEN 'periodic schedule ' || quote_literal(_tf_maintenance_failed.subject)
                                  ELSE 'task ' || _tf_maintenance_failed.subject END,
                             v_message, _tf_maintenance_failed.sqlstate),
            DETAIL = format('The other rows were processed. The row is retried after %s; until then it is listed '
                            'in taskforge.tf_maintenance_errors.', v_retry_after);
    END IF;
    RETURN v_retry_after;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_maintenance_failed(text, text, text, text, timestamptz) IS
    'Private: record a row a maintenance sweep could not process in maintenance_errors (retry after 60 s doubling to 1 h); a new error raises a WARNING for the scheduler''s log. Returns retry_after.';
REVOKE ALL ON FUNCTION taskforge._tf_maintenance_failed(text, text, text, text, timestamptz) FROM PUBLIC;
