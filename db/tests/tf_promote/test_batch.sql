-- tf_promote: max_tasks bounds the batch and the earliest scheduled_at goes first.
BEGIN;
SELECT plan(7);
-- tf_promote acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('promote-batch-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'promote_batch')) AS task_id
  FROM generate_series(1, 3) s(n);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_batch'], max_tasks => 3);
CREATE TEMP TABLE f AS
SELECT f.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, 'retryable') f;
-- Task n became due 10*n seconds ago: the last created is the first due (promotion goes by scheduled_at).
CREATE TEMP TABLE due_at AS SELECT n, task_id, clock_timestamp() - make_interval(secs => 10 * n) AS at FROM sub;
UPDATE taskforge.tasks t SET scheduled_at = d.at FROM due_at d WHERE t.task_id = d.task_id;

CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_promote(max_tasks => 2);
SELECT is((SELECT count(*)::int FROM f WHERE task_state = 'RETRYING'), 3, 'setup: three tasks RETRYING');
SELECT is((SELECT promoted FROM r1), 2, 'max_tasks => 2 promotes two tasks');
SELECT results_eq($$SELECT n FROM sub JOIN taskforge.tasks t USING (task_id) WHERE t.state = 'QUEUED' ORDER BY n$$,
                  ARRAY[2, 3], 'the two earliest scheduled_at were promoted first');
SELECT is((SELECT next_due_at FROM r1), (SELECT at FROM due_at WHERE n = 1),
          'next_due_at is the scheduled_at of the task left (already due, for the next call)');
SELECT results_eq('SELECT promoted, next_due_at FROM taskforge.tf_promote(max_tasks => 2)', $$VALUES (1, NULL::timestamptz)$$,
                  'the next call promotes the last one');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN sub USING (task_id)), 3, 'still one attempt per task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
