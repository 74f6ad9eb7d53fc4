-- tf_register_worker rejects a bad name or heartbeat interval with TF400 and records nothing; edge values are accepted.
BEGIN;
SELECT plan(14);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message that names the argument ("<argument>: <problem>").
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ...", got %s',
        p_sqlstate, p_argument, coalesce(v_state || ' "' || v_message || '"', 'no error')));
END;
$helper$;

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker(NULL)$$, 'TF400', 'name', 'name NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('')$$, 'TF400', 'name', 'an empty name is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker(rpad('w_regval_long', 201, 'x'))$$, 'TF400', 'name', 'a 201-character name is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => 0)$$, 'TF400', 'heartbeat_seconds', 'heartbeat_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => -1)$$, 'TF400', 'heartbeat_seconds', 'a negative heartbeat_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => 'NaN')$$, 'TF400', 'heartbeat_seconds', 'heartbeat_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => 'Infinity')$$, 'TF400', 'heartbeat_seconds', 'heartbeat_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => 3600.5)$$, 'TF400', 'heartbeat_seconds', 'heartbeat_seconds above 3600 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker('w_regval_hb', heartbeat_seconds => NULL)$$, 'TF400', 'heartbeat_seconds', 'heartbeat_seconds NULL is TF400');
SELECT is((SELECT count(*)::int FROM taskforge.workers WHERE name = 'w_regval_hb' OR name LIKE 'w_regval_long%' OR name = ''), 0,
    'no rejected call recorded a worker');

SELECT lives_ok($$SELECT taskforge.tf_register_worker(rpad('w_regval_long', 200, 'x'))$$, 'a 200-character name is accepted');
SELECT lives_ok($$SELECT taskforge.tf_register_worker('w_regval_edge', heartbeat_seconds => 3600)$$, 'heartbeat_seconds 3600 is accepted');
SELECT lives_ok($$SELECT taskforge.tf_register_worker('w_regval_edge', heartbeat_seconds => 0.01)$$, 'heartbeat_seconds 0.01 is accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
