-- tf_promote: max_tasks outside 1..100000 (or NULL) is TF400 naming the argument, and nothing is promoted by the failed call.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('promote-validation-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'promote_validation');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_validation']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 1, 'retryable');
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub);

SELECT throws_ok('SELECT * FROM taskforge.tf_promote(max_tasks => 0)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 0', 'max_tasks 0 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_promote(max_tasks => 100001)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 100001', 'max_tasks above 100000 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_promote(max_tasks => NULL)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got NULL', 'NULL max_tasks is TF400');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'RETRYING',
          'the rejected calls promoted nothing');
SELECT lives_ok('SELECT * FROM taskforge.tf_promote(max_tasks => 100000)', 'max_tasks 100000 is accepted');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED',
          'a valid call promotes the due task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
