-- tf_recover: max_tasks outside 1..100000 (or NULL) is TF400 naming the argument, and nothing is recovered by the failed call.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-validation-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_validation');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_validation']);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub);

SELECT throws_ok('SELECT * FROM taskforge.tf_recover(max_tasks => 0)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 0', 'max_tasks 0 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_recover(max_tasks => -5)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got -5', 'negative max_tasks is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_recover(max_tasks => 100001)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 100001', 'max_tasks above 100000 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_recover(max_tasks => NULL)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got NULL', 'NULL max_tasks is TF400');
SELECT results_eq($$SELECT state::text, attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('RUNNING'::text, 1)$$, 'the rejected calls recovered nothing');
SELECT lives_ok('SELECT * FROM taskforge.tf_recover(max_tasks => 100000)', 'max_tasks 100000 is accepted');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED',
          'a valid call recovers the expired task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
