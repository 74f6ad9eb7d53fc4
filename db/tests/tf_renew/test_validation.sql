-- tf_renew rejects bad arguments with TF400 and an unknown task with TF404, changing nothing.
BEGIN;
SELECT plan(16);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_renew_validation') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_renew_validation');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_renew_validation'], 60);
CREATE TEMP TABLE snap AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew(NULL, (SELECT id FROM w), 1)$$,
    'TF400', 'task_id', 'task_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), NULL, 1)$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), NULL)$$,
    'TF400', 'attempt_number', 'attempt_number NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 0)$$,
    'TF400', 'attempt_number', 'attempt_number 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 0)$$,
    'TF400', 'lease_seconds', 'lease_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, -10)$$,
    'TF400', 'lease_seconds', 'a negative lease_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 'NaN')$$,
    'TF400', 'lease_seconds', 'lease_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 'Infinity')$$,
    'TF400', 'lease_seconds', 'lease_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 86400.5)$$,
    'TF400', 'lease_seconds', 'lease_seconds above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, NULL)$$,
    'TF400', 'lease_seconds', 'lease_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew((SELECT max(task_id) + 1000000 FROM taskforge.tasks), (SELECT id FROM w), 1)$$,
    'TF404', 'task_id', 'an unknown task is TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew(-1, (SELECT id FROM w), 1)$$,
    'TF404', 'task_id', 'a negative task id is TF404');

SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap x),
    'the task row is unchanged after the rejected calls');
SELECT is((SELECT a.lease_expires_at FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT lease_expires_at FROM c),
    'the attempt keeps its deadline');
SELECT is((SELECT renewed FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 86400)), true,
    'lease_seconds 86400 is accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
