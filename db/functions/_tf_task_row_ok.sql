-- taskforge._tf_task_row_ok(state text, attempt_count int, max_attempts int,
--     owner_worker_id uuid, lease_expires_at timestamptz, finished_at timestamptz,
--     idempotency_key text, fingerprint bytea, cancel_reason text,
--     cancel_requested_at timestamptz)
--   -> boolean                                                               (private helper)
--
-- Purpose:    the rules across the columns of one taskforge.tasks row, the body of its CHECK
--             constraint tasks_row_rules (db/schema/52_row_rules.sql). Each rule keeps its own
--             name, which a violation reports as the constraint:
--               tasks_attempts_within_budget       0 <= attempt_count <= max_attempts;
--               tasks_owner_iff_running            owner and lease present exactly while
--                                                  RUNNING (and then attempt_count >= 1);
--               tasks_finished_iff_terminal        finished_at set exactly in SUCCEEDED,
--                                                  FAILED, CANCELLED;
--               tasks_retrying_has_budget          RETRYING leaves attempt_count < max_attempts;
--               tasks_queued_has_budget            QUEUED leaves attempt_count < max_attempts;
--               tasks_fingerprint_iff_key          a fingerprint exactly with a key;
--               tasks_cancel_reason_needs_request  a cancel reason only with a cancel request.
--             As in any CHECK, a rule that evaluates to NULL holds.
-- Why a function: PostgreSQL 15 prepares the CHECK constraints of a table again for every
--             INSERT or UPDATE statement, parsing each one's stored expression text, whatever
--             columns the statement writes; a worker turn writes three times. Written out, the
--             seven rules of tasks and three of attempts were 10.7 KB of expression text, a
--             sixth of a one-task turn's CPU (docs/benchmarks.md, "The hot path in SQL"). A call
--             of this function is a short expression; PL/pgSQL keeps its compiled body for the
--             session, and the function is not inlined (a SQL function would be, its text
--             parsed again at each preparation).
-- search_path: no SET clause (it would cost a configuration save and restore on every row
--             written: +9 % CPU per task of a batch); instead the body names nothing through the
--             search_path: every operator is written OPERATOR(pg_catalog.x) and every type
--             pg_catalog.x, so a caller's search_path cannot change what it means
--             (db/tests/catalog/test_function_security.sql tries a hostile one).
-- Returns:    true when every rule holds.
-- Errors:     23514 check_violation naming the broken rule as the constraint (the first in the
--             order above), table taskforge.tasks.
-- Clock:      none.  Locks: none.
-- By hand:    harmless; IMMUTABLE (its result depends on its arguments only).
CREATE OR REPLACE FUNCTION taskforge._tf_task_row_ok(
    state text, attempt_count int, max_attempts int, owner_worker_id uuid,
    lease_expires_at timestamptz, finished_at timestamptz, idempotency_key text,
    fingerprint bytea, cancel_reason text, cancel_requested_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $fn$
DECLARE
    v_rule pg_catalog.text;
BEGIN
    v_rule := CASE
        WHEN (attempt_count OPERATOR(pg_catalog.>=) 0 AND attempt_count OPERATOR(pg_catalog.<=) max_attempts) IS FALSE
            THEN 'tasks_attempts_within_budget'
        WHEN ((state OPERATOR(pg_catalog.=) 'RUNNING' AND owner_worker_id IS NOT NULL AND lease_expires_at IS NOT NULL
               AND attempt_count OPERATOR(pg_catalog.>=) 1)
              OR (state OPERATOR(pg_catalog.<>) 'RUNNING' AND owner_worker_id IS NULL AND lease_expires_at IS NULL)) IS FALSE
            THEN 'tasks_owner_iff_running'
        WHEN ((finished_at IS NOT NULL)
              OPERATOR(pg_catalog.=) (state OPERATOR(pg_catalog.=) ANY ('{SUCCEEDED,FAILED,CANCELLED}'::pg_catalog.text[]))) IS FALSE
            THEN 'tasks_finished_iff_terminal'
        WHEN (state OPERATOR(pg_catalog.<>) 'RETRYING' OR attempt_count OPERATOR(pg_catalog.<) max_attempts) IS FALSE
            THEN 'tasks_retrying_has_budget'
        WHEN (state OPERATOR(pg_catalog.<>) 'QUEUED' OR attempt_count OPERATOR(pg_catalog.<) max_attempts) IS FALSE
            THEN 'tasks_queued_has_budget'
        WHEN ((idempotency_key IS NULL) OPERATOR(pg_catalog.=) (fingerprint IS NULL)) IS FALSE
            THEN 'tasks_fingerprint_iff_key'
        WHEN (cancel_reason IS NULL OR cancel_requested_at IS NOT NULL) IS FALSE
            THEN 'tasks_cancel_reason_needs_request'
    END;
    IF v_rule IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "tasks" violates check constraint "%"', v_rule
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule, SCHEMA = 'taskforge', TABLE = 'tasks';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_task_row_ok(text, int, int, uuid, timestamptz, timestamptz, text, bytea, text, timestamptz) IS
    'Private: the body of CHECK tasks_row_rules: true when every rule across the columns of a tasks row holds, else 23514 naming the broken rule.';
REVOKE ALL ON FUNCTION taskforge._tf_task_row_ok(
    text, int, int, uuid, timestamptz, timestamptz, text, bytea, text, timestamptz
) FROM PUBLIC;
