-- tf_claim rejects bad arguments with TF400, unknown or deregistered workers with TF404, and claims nothing on error; edge values are accepted.
BEGIN;
SELECT plan(25);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_validation') AS id;
CREATE TEMP TABLE gone AS SELECT taskforge.tf_register_worker('w_claim_validation_gone') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_validation');
SELECT lives_ok($$SELECT taskforge.tf_deregister_worker((SELECT id FROM gone))$$, 'deregister the second worker');

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim(NULL, ARRAY['q_claim_validation'])$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim(gen_random_uuid(), ARRAY['q_claim_validation'])$$,
    'TF404', 'worker_id', 'an unknown worker is TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM gone), ARRAY['q_claim_validation'])$$,
    'TF404', 'worker_id', 'a deregistered worker is TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 0)$$,
    'TF400', 'lease_seconds', 'lease_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], -1)$$,
    'TF400', 'lease_seconds', 'a negative lease_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 'NaN')$$,
    'TF400', 'lease_seconds', 'lease_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 'Infinity')$$,
    'TF400', 'lease_seconds', 'lease_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], '-Infinity')$$,
    'TF400', 'lease_seconds', 'lease_seconds -Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 86400.001)$$,
    'TF400', 'lease_seconds', 'lease_seconds above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], NULL)$$,
    'TF400', 'lease_seconds', 'lease_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 30, 0)$$,
    'TF400', 'max_tasks', 'max_tasks 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 30, -1)$$,
    'TF400', 'max_tasks', 'a negative max_tasks is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 30, 1001)$$,
    'TF400', 'max_tasks', 'max_tasks 1001 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 30, NULL)$$,
    'TF400', 'max_tasks', 'max_tasks NULL is TF400');

-- Nothing was claimed by a rejected call.
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN s USING (task_id)), 'QUEUED', 'the task is still QUEUED');
SELECT is((SELECT attempt_count FROM taskforge.tasks JOIN s USING (task_id)), 0, 'its attempt_count is still 0');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN s USING (task_id)), 0, 'it has no attempt');

-- Edge values are accepted.
CREATE TEMP TABLE c_max AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 86400);
SELECT is((SELECT task_id FROM c_max), (SELECT task_id FROM s), 'lease_seconds 86400 claims the task');
SELECT is((SELECT a.lease_expires_at - a.started_at FROM taskforge.attempts a JOIN s USING (task_id)), interval '1 day',
    'a lease of 86400 s lasts one day');
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_validation');
CREATE TEMP TABLE c_tiny AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 0.001);
SELECT is((SELECT task_id FROM c_tiny), (SELECT task_id FROM s2), 'lease_seconds 0.001 claims the task');
SELECT is((SELECT a.lease_expires_at - a.started_at FROM taskforge.attempts a JOIN s2 USING (task_id)), interval '1 millisecond',
    'a lease of 0.001 s lasts one millisecond');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_validation'], 30, 1000)), 0,
    'max_tasks 1000 is accepted (nothing left to claim)');
-- A worker id is a uuid: a malformed one never reaches the function.
SELECT throws_ok($$SELECT * FROM taskforge.tf_claim('not-a-uuid')$$, '22P02', NULL, 'a malformed worker_id is rejected by the uuid type');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
