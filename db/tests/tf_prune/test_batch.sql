-- tf_prune deletes the oldest finished tasks first, at most max_tasks per call.
BEGIN;
SELECT plan(7);
-- tf_prune acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE sub AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'prune_batch')) AS task_id
  FROM generate_series(1, 5) s(n);
CREATE TEMP TABLE x AS SELECT s.n, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_cancel(s.task_id) k;
-- Task n finished n hours ago: the last created is the oldest finished.
UPDATE taskforge.tasks t SET finished_at = clock_timestamp() - make_interval(hours => s.n) FROM sub s WHERE t.task_id = s.task_id;

SELECT is((SELECT count(*)::int FROM x WHERE task_state = 'CANCELLED'), 5, 'setup: five CANCELLED tasks');
SELECT is(taskforge.tf_prune(60, max_tasks => 2), 2, 'max_tasks => 2 deletes two tasks');
SELECT results_eq('SELECT n FROM sub JOIN taskforge.tasks USING (task_id) ORDER BY n', ARRAY[1, 2, 3],
                  'the two oldest finished tasks went first');
SELECT is(taskforge.tf_prune(60, max_tasks => 2), 2, 'the next call deletes two more');
SELECT results_eq('SELECT n FROM sub JOIN taskforge.tasks USING (task_id) ORDER BY n', ARRAY[1], 'then the next oldest two');
SELECT is(taskforge.tf_prune(60, max_tasks => 2), 1, 'a short batch means the work is done');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
