-- tf_cancel: an unknown task id is TF404 and a NULL id is TF400.
BEGIN;
SELECT plan(4);
CREATE TEMP TABLE missing AS SELECT coalesce(max(task_id), 0) + 1000000 AS id FROM taskforge.tasks;
SELECT throws_ok(format('SELECT * FROM taskforge.tf_cancel(%s)', (SELECT id FROM missing)), 'TF404',
                 format('task_id: no task %s', (SELECT id FROM missing)), 'an unknown task id is TF404');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_cancel(%s, %L)', (SELECT id FROM missing), 'why'), 'TF404',
                 NULL, 'an unknown task id with a reason is TF404 too');
SELECT throws_ok('SELECT * FROM taskforge.tf_cancel(NULL)', 'TF400', 'task_id: must not be NULL', 'a NULL task id is TF400');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
