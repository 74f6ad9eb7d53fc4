-- tf_register_task_type timeout_seconds: stored (NULL = none), replaced by a later call, 0 < s <= 604800 else TF400 naming timeout_seconds; tasks keep the timeout they were submitted with.
BEGIN;
SELECT plan(9);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('timeout.t', timeout_seconds => 604800)$$, 'the 7-day maximum is accepted');
SELECT is((SELECT timeout_seconds FROM taskforge.task_types WHERE task_type = 'timeout.t'), 604800::float8, 'stored');
CREATE TEMP TABLE before AS SELECT task_id FROM taskforge.tf_submit('timeout.t');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('timeout.t', timeout_seconds => 5)$$, 'changed to 5 s');
SELECT is((SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM before)), 604800::float8,
          'a task submitted earlier keeps its timeout');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('timeout.t')$$, 'a call without timeout_seconds');
SELECT is((SELECT timeout_seconds FROM taskforge.task_types WHERE task_type = 'timeout.t'), NULL::float8, 'sets the default: no timeout');
SELECT throws_like($$SELECT taskforge.tf_register_task_type('timeout.t', timeout_seconds => 0)$$, 'timeout_seconds:%', '0 is TF400 naming timeout_seconds');
SELECT throws_like($$SELECT taskforge.tf_register_task_type('timeout.t', timeout_seconds => 604801)$$, 'timeout_seconds:%', 'over 7 days is TF400');
SELECT throws_like($$SELECT taskforge.tf_register_task_type('timeout.t', timeout_seconds => 'NaN')$$, 'timeout_seconds:%', 'NaN is TF400');
SELECT * FROM finish();
ROLLBACK;
