-- tf_prune: older_than_seconds outside 0..3153600000 (or NULL, NaN, infinite) and max_tasks outside 1..100000 are TF400 naming the argument.
BEGIN;
SELECT plan(11);
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'prune_validation');
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub));
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '1 day' WHERE task_id = (SELECT task_id FROM sub);

SELECT throws_ok('SELECT taskforge.tf_prune(NULL)', 'TF400', 'older_than_seconds: must not be NULL', 'NULL older_than_seconds is TF400');
SELECT throws_ok('SELECT taskforge.tf_prune(-1)', 'TF400', 'older_than_seconds: must be at least 0 and at most 3153600000 seconds, got -1',
                 'negative older_than_seconds is TF400');
SELECT throws_ok('SELECT taskforge.tf_prune(3153600001)', 'TF400', NULL, 'older_than_seconds above 100 years is TF400');
SELECT throws_ok($$SELECT taskforge.tf_prune('NaN')$$, 'TF400', 'older_than_seconds: must be a finite number of seconds, got NaN',
                 'NaN older_than_seconds is TF400');
SELECT throws_ok($$SELECT taskforge.tf_prune('Infinity')$$, 'TF400', NULL, 'infinite older_than_seconds is TF400');
SELECT throws_ok('SELECT taskforge.tf_prune(60, max_tasks => 0)', 'TF400', 'max_tasks: must be between 1 and 100000, got 0', 'max_tasks 0 is TF400');
SELECT throws_ok('SELECT taskforge.tf_prune(60, max_tasks => 100001)', 'TF400', 'max_tasks: must be between 1 and 100000, got 100001',
                 'max_tasks above 100000 is TF400');
SELECT throws_ok('SELECT taskforge.tf_prune(60, max_tasks => NULL)', 'TF400', 'max_tasks: must be between 1 and 100000, got NULL',
                 'NULL max_tasks is TF400');
SELECT isnt_empty('SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)', 'the rejected calls deleted nothing');
SELECT lives_ok('SELECT taskforge.tf_prune(3153600000, max_tasks => 100000)', 'the upper bounds are accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
