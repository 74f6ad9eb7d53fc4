-- taskforge._tf_maintenance_row_error(sqlstate text) -> boolean              (private helper)
--
-- Purpose:    tell the maintenance sweeps (tf_recover, tf_promote, tf_enqueue_periodic, tf_prune)
--             whether an error they caught is about the row they were processing, so that they
--             skip and record that row and go on with the others, or about the database or the
--             moment, so that they re-raise it and the whole call fails (and is repeated by its
--             caller, or stops it):
--               not about a row: classes 08 (connection), 25 (transaction state, e.g. 25006
--               read-only after a failover), 40 (deadlock, serialization failure), 42 (syntax or
--               access rule: a missing table, function or privilege fails every row alike), 53
--               (insufficient resources), 55 (e.g. 55P03 lock_not_available), 57 (operator
--               intervention), 58 (system error), F0 (configuration file);
--               about the row: every other SQLSTATE, e.g. 23xxx (a constraint the row's new
--               version breaks), 22xxx (a value of the row), P0001 (a trigger that refused the
--               row), XX000 (_tf_broken_invariant found the row broken), TFxxx (a refusal of the
--               rules, e.g. a periodic schedule's request that tf_submit refuses now).
--             query_canceled (57014, statement_timeout) and assert_failure never reach a sweep's
--             handler: PL/pgSQL's WHEN OTHERS does not catch them.
-- Parameters: sqlstate  the caught error's SQLSTATE (5 characters).
-- Returns:    true when the error is about the row; NULL sqlstate: false.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_maintenance_row_error(sqlstate text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT coalesce(left(_tf_maintenance_row_error.sqlstate, 2)
                    NOT IN ('08', '25', '40', '42', '53', '55', '57', '58', 'F0'), false);
$fn$;

COMMENT ON FUNCTION taskforge._tf_maintenance_row_error(text) IS
    'Private: true when a SQLSTATE caught by a maintenance sweep is about the row (skip and record it), false when about the database or the moment (08, 25, 40, 42, 53, 55, 57, 58, F0: re-raise).';
REVOKE ALL ON FUNCTION taskforge._tf_maintenance_row_error(text) FROM PUBLIC;
