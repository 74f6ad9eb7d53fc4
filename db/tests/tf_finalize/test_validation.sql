-- tf_finalize rejects bad arguments with TF400 and an unknown task with TF404 before touching anything; a result of exactly 1 MiB is accepted.
BEGIN;
SELECT plan(22);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_validation') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_validation');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_validation'], 600);
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize(NULL, (SELECT id FROM w), 1, 'succeeded')$$,
    'TF400', 'task_id', 'task_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), NULL, 1, 'succeeded')$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), NULL, 'succeeded')$$,
    'TF400', 'attempt_number', 'attempt_number NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 0, 'succeeded')$$,
    'TF400', 'attempt_number', 'attempt_number 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, NULL)$$,
    'TF400', 'outcome', 'outcome NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'success')$$,
    'TF400', 'outcome', 'outcome ''success'' is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'SUCCEEDED')$$,
    'TF400', 'outcome', 'outcomes are lower case: ''SUCCEEDED'' is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, '')$$,
    'TF400', 'outcome', 'an empty outcome is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'lease_expired')$$,
    'TF400', 'outcome', 'lease_expired is recorded by recovery, not a worker outcome: TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'succeeded', to_jsonb(repeat('x', 1048575)))$$,
    'TF400', 'result', 'a result of 1 MiB + 1 byte is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'failed', jsonb_build_object('a', repeat('x', 2000000)))$$,
    'TF400', 'result', 'an oversized result is TF400 whatever the outcome');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT max(task_id) + 1000000 FROM taskforge.tasks), (SELECT id FROM w), 1, 'succeeded')$$,
    'TF404', 'task_id', 'an unknown task is TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize((SELECT max(task_id) + 1000000 FROM taskforge.tasks), (SELECT id FROM w), 1, 'bogus')$$,
    'TF400', 'outcome', 'arguments are validated before the task is looked up');

SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task row is unchanged after the rejected calls');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att x), 'the attempt row is unchanged');

-- "x" repeated 1048574 times is exactly 1 MiB as JSON text.
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'succeeded', to_jsonb(repeat('x', 1048574)));
SELECT is((SELECT accepted FROM f), true, 'a result of exactly 1 MiB is accepted');
SELECT is((SELECT octet_length(result::text) FROM taskforge.tasks JOIN s USING (task_id)), 1048576, 'the 1 MiB result is stored whole');

-- Parameter names are the API.
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_validation');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_validation']);
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize(error => '{"message": "named"}', outcome => 'failed',
    attempt_number => (SELECT attempt_number FROM c2), worker_id => (SELECT id FROM w), task_id => (SELECT task_id FROM c2));
SELECT is((SELECT accepted FROM f2), true, 'a call with named arguments in another order is accepted');
SELECT is((SELECT task_state FROM f2), 'FAILED', 'and its outcome applies');
SELECT is((SELECT last_error FROM taskforge.tasks JOIN s2 USING (task_id)), '{"message": "named"}'::jsonb, 'the named error is stored');
SELECT is((SELECT count(*)::int FROM taskforge.attempts a JOIN s USING (task_id) WHERE a.state = 'SUCCEEDED'), 1,
    'the first task has exactly one finished attempt');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
