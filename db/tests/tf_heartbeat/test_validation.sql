-- tf_heartbeat rejects a NULL worker with TF400 and an unknown or deregistered worker with TF404, recording nothing.
BEGIN;
SELECT plan(6);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_heartbeat_validation') AS id;
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_heartbeat(NULL)$$, 'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_heartbeat(gen_random_uuid())$$, 'TF404', 'worker_id', 'an unknown worker is TF404');
SELECT lives_ok($$SELECT taskforge.tf_deregister_worker((SELECT id FROM w))$$, 'deregister the worker');
CREATE TEMP TABLE before AS SELECT * FROM taskforge.workers WHERE worker_id = (SELECT id FROM w);
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_heartbeat((SELECT id FROM w))$$, 'TF404', 'worker_id', 'a deregistered worker is TF404');
SELECT is((SELECT x::text FROM taskforge.workers x WHERE worker_id = (SELECT id FROM w)), (SELECT b::text FROM before b),
    'the refused heartbeat changed nothing');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
