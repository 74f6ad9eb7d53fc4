-- taskforge._tf_attempt_row_ok(state text, outcome text, started_at timestamptz,
--     lease_expires_at timestamptz, finished_at timestamptz)
--   -> boolean                                                               (private helper)
--
-- Purpose:    the rules across the columns of one taskforge.attempts row, the body of its CHECK
--             constraint attempts_row_rules (db/schema/52_row_rules.sql). Each rule keeps its
--             own name, which a violation reports as the constraint:
--               attempts_final_iff_finished      finished_at and outcome set exactly when the
--                                                state is not RUNNING;
--               attempts_finished_after_start    finished_at >= started_at;
--               attempts_abandoned_after_expiry  an ABANDONED attempt finished at or after its
--                                                lease expired.
--             As in any CHECK, a rule that evaluates to NULL holds. Why a function, and why no
--             SET clause (every operator and type named in pg_catalog): as
--             taskforge._tf_task_row_ok.
-- Returns:    true when every rule holds.
-- Errors:     23514 check_violation naming the broken rule as the constraint (the first in the
--             order above), table taskforge.attempts.
-- Clock:      none.  Locks: none.
-- By hand:    harmless; IMMUTABLE (its result depends on its arguments only).
CREATE OR REPLACE FUNCTION taskforge._tf_attempt_row_ok(
    state text, outcome text, started_at timestamptz, lease_expires_at timestamptz,
    finished_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
AS $fn$
DECLARE
    v_rule pg_catalog.text;
BEGIN
    v_rule := CASE
        WHEN ((state OPERATOR(pg_catalog.=) 'RUNNING') OPERATOR(pg_catalog.=) (finished_at IS NULL)
              AND (state OPERATOR(pg_catalog.=) 'RUNNING') OPERATOR(pg_catalog.=) (outcome IS NULL)) IS FALSE
            THEN 'attempts_final_iff_finished'
        WHEN (finished_at IS NULL OR finished_at OPERATOR(pg_catalog.>=) started_at) IS FALSE
            THEN 'attempts_finished_after_start'
        WHEN (state OPERATOR(pg_catalog.<>) 'ABANDONED' OR finished_at OPERATOR(pg_catalog.>=) lease_expires_at) IS FALSE
            THEN 'attempts_abandoned_after_expiry'
    END;
    IF v_rule IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "attempts" violates check constraint "%"', v_rule
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule, SCHEMA = 'taskforge', TABLE = 'attempts';
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_attempt_row_ok(text, text, timestamptz, timestamptz, timestamptz) IS
    'Private: the body of CHECK attempts_row_rules: true when every rule across the columns of an attempts row holds, else 23514 naming the broken rule.';
REVOKE ALL ON FUNCTION taskforge._tf_attempt_row_ok(
    text, text, timestamptz, timestamptz, timestamptz
) FROM PUBLIC;
