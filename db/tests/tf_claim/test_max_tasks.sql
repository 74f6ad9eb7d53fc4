-- tf_claim returns at most max_tasks rows, claims exactly what it returns, and zero rows when the queue is drained.
BEGIN;
SELECT plan(11);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_max') AS id;
SELECT lives_ok($$SELECT count(*) FROM generate_series(1, 5) g, taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_claim_max')$$,
    'submit five tasks');

CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_max'], max_tasks => 3);
SELECT is((SELECT count(*)::int FROM c1), 3, 'max_tasks 3 of 5 returns 3 rows');
SELECT is((SELECT count(DISTINCT task_id)::int FROM c1), 3, 'the 3 rows are 3 different tasks');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_claim_max' AND state = 'RUNNING'), 3,
    'exactly the 3 returned tasks are RUNNING');
SELECT is((SELECT count(*)::int FROM taskforge.tasks t JOIN c1 USING (task_id) WHERE t.state = 'RUNNING'
             AND t.owner_worker_id = (SELECT id FROM w)), 3, 'the returned tasks are the running ones, owned by the caller');

CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_max'], max_tasks => 1000);
SELECT is((SELECT count(*)::int FROM c2), 2, 'max_tasks 1000 with 2 left returns 2 rows');
SELECT is((SELECT count(*)::int FROM c2 JOIN c1 USING (task_id)), 0, 'no task is returned twice');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_max'], max_tasks => 10)), 0,
    'a drained queue gives zero rows');

SELECT lives_ok($$SELECT count(*) FROM generate_series(1, 3) g, taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_claim_max')$$,
    'submit three more');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_max'])), 1,
    'the default max_tasks is 1');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
