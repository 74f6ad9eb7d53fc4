-- tf_finalize_and_claim rejects bad arguments with TF400 naming the argument (and element) and writes nothing, neither the finalize nor the claim: the finalize arrays as tf_finalize_many, the empty-batch rules, max_tasks (1..1000 when only claiming, 0..1000 otherwise), and the claim arguments as tf_claim, also when max_tasks is 0.
BEGIN;
SELECT plan(37);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_validation') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fac_validation')) AS task_id
  FROM generate_series(1, 2) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_validation'], 600, max_tasks => 10);
CREATE TEMP TABLE ids AS SELECT array_agg(task_id ORDER BY n) AS a FROM k;
-- A due task a valid claim would take.
CREATE TEMP TABLE waiting AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fac_validation');
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t WHERE t.queue = 'q_fac_validation';
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id) WHERE t.queue = 'q_fac_validation';

-- Finalize arrays (element 1 always valid).
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim(NULL, (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded', 'succeeded'])$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim(NULL, '{}', '{}', '{}')$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400 when only claiming');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), NULL, ARRAY[1], ARRAY['succeeded'])$$,
    'TF400', 'task_ids', 'task_ids NULL is TF400 (use an empty array to only claim)');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT array_agg(g::bigint) FROM generate_series(1, 1001) g),
    (SELECT array_agg(1) FROM generate_series(1, 1001) g), (SELECT array_agg('failed'::text) FROM generate_series(1, 1001) g))$$,
    'TF400', 'task_ids', '1001 elements is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a || NULL::bigint FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'task_ids[3]', 'a NULL task id is TF400 naming task_ids[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a || a[1] FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'task_ids[3]', 'a task named twice is TF400 naming task_ids[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1], ARRAY['succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 0], ARRAY['succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers[2]', 'attempt number 0 is TF400 naming attempt_numbers[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded'])$$,
    'TF400', 'outcomes', 'outcomes shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded', 'done'])$$,
    'TF400', 'outcomes[2]', 'an unknown outcome is TF400 naming outcomes[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded', 'succeeded'],
    ARRAY[NULL, to_jsonb(repeat('x', 1048575))])$$,
    'TF400', 'results[2]', 'a result over 1 MiB is TF400 naming results[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded', 'succeeded'],
    ARRAY['{}'::jsonb])$$,
    'TF400', 'results', 'a results array shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['failed', 'failed'],
    errors => ARRAY['{}'::jsonb, '{}', '{}'])$$,
    'TF400', 'errors', 'an errors array longer than task_ids is TF400');

-- Empty task_ids: the other arrays must be empty too (results/errors NULL or empty), and the call must claim.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', NULL, '{}')$$,
    'TF400', 'attempt_numbers', 'empty task_ids with attempt_numbers NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', ARRAY[1], '{}')$$,
    'TF400', 'attempt_numbers', 'empty task_ids with an attempt number is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', NULL)$$,
    'TF400', 'outcomes', 'empty task_ids with outcomes NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', ARRAY['succeeded'])$$,
    'TF400', 'outcomes', 'empty task_ids with an outcome is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', ARRAY['{}'::jsonb])$$,
    'TF400', 'results', 'empty task_ids with a result is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', errors => ARRAY['{}'::jsonb])$$,
    'TF400', 'errors', 'empty task_ids with an error is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', max_tasks => 0)$$,
    'TF400', 'max_tasks', 'empty task_ids with max_tasks 0 (a call that does nothing) is TF400');

-- max_tasks and the claim arguments, with a valid finalize element that must not be written.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'], max_tasks => -1)$$,
    'TF400', 'max_tasks', 'max_tasks -1 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'], max_tasks => 1001)$$,
    'TF400', 'max_tasks', 'max_tasks 1001 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'], max_tasks => NULL)$$,
    'TF400', 'max_tasks', 'max_tasks NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', max_tasks => 1001)$$,
    'TF400', 'max_tasks', 'max_tasks 1001 is TF400 when only claiming');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    queues => ARRAY['q_fac_validation', 'bad queue!'])$$,
    'TF400', 'queues', 'a malformed queue name is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    queues => ARRAY[NULL::text])$$,
    'TF400', 'queues', 'a NULL queue name is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    task_types => ARRAY['Not A Type'])$$,
    'TF400', 'task_types', 'a malformed task type is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    lease_seconds => 0)$$,
    'TF400', 'lease_seconds', 'lease_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    lease_seconds => 86401)$$,
    'TF400', 'lease_seconds', 'lease_seconds above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    lease_seconds => NULL)$$,
    'TF400', 'lease_seconds', 'lease_seconds NULL is TF400');
-- max_tasks 0 claims nothing, but its claim arguments are still the API's to validate.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    queues => ARRAY['bad queue!'], max_tasks => 0)$$,
    'TF400', 'queues', 'with max_tasks 0 a malformed queue name is still TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    task_types => ARRAY['Not A Type'], max_tasks => 0)$$,
    'TF400', 'task_types', 'with max_tasks 0 a malformed task type is still TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), (SELECT a[1:1] FROM ids), ARRAY[1], ARRAY['succeeded'],
    lease_seconds => -1, max_tasks => 0)$$,
    'TF400', 'lease_seconds', 'with max_tasks 0 a negative lease_seconds is still TF400');

SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t WHERE t.queue = 'q_fac_validation'),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'no rejected call finalized or claimed anything');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id) FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id) WHERE t.queue = 'q_fac_validation'),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_att x), 'no attempt changed or was added');

-- Parameter names are the API; the bounds that are accepted.
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_finalize_and_claim(max_tasks => 1000, lease_seconds => 86400, task_types => ARRAY['noop'],
    queues => ARRAY['q_fac_validation'], errors => NULL, results => ARRAY['{"named": true}'::jsonb], outcomes => ARRAY['succeeded'],
    attempt_numbers => ARRAY[1], task_ids => (SELECT a[1:1] FROM ids), worker_id => (SELECT id FROM w));
SELECT is((SELECT array_agg(kind || '/' || coalesce(task_state, task_id::text) ORDER BY kind DESC)
             FROM r), ARRAY['finalized/SUCCEEDED', 'claimed/' || (SELECT task_id FROM waiting)],
    'named arguments in another order, max_tasks 1000 and lease_seconds 86400 are accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
