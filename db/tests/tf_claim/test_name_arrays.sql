-- tf_claim validates its queues and task_types arrays like tf_submit validates one name: a NULL or malformed element is TF400 naming the argument, and nothing is claimed.
BEGIN;
SELECT plan(9);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('claim-arrays') AS id;
SELECT ok((SELECT created FROM taskforge.tf_submit('noop', queue => 'q_claim_arrays')), 'a task is waiting');

SELECT throws_ok(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, queues => ARRAY['q_claim_arrays', NULL])$$, (SELECT id FROM w)),
                 'TF400', NULL, 'a NULL queue element is refused');
SELECT throws_like(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, queues => ARRAY['bad queue'])$$, (SELECT id FROM w)),
                   'queues: every element must match%', 'a malformed queue name is refused, naming queues');
SELECT throws_like(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, task_types => ARRAY['NOOP'])$$, (SELECT id FROM w)),
                   'task_types: every element must match%', 'a malformed task type is refused, naming task_types');
SELECT throws_ok(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, queues => ARRAY[['a'],['b']])$$, (SELECT id FROM w)),
                 'TF400', 'queues: must be a one-dimensional array', 'a two-dimensional array is refused');
SELECT is((SELECT state FROM taskforge.tasks WHERE queue = 'q_claim_arrays'), 'QUEUED', 'nothing was claimed by the refused calls');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN taskforge.tasks t USING (task_id) WHERE t.queue = 'q_claim_arrays'), 0,
          'no attempt was written');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim(worker_id => (SELECT id FROM w), queues => ARRAY['q_claim_arrays'],
                                                         task_types => ARRAY['noop'])), 1, 'well-formed arrays claim as before');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
