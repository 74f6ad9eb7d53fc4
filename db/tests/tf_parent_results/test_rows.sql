-- tf_parent_results gives the worker holding an attempt one row per parent of its task, in parent id order whatever the order of depends_on, with the parent's state (SUCCEEDED) and result; no rows for a task without parents; a later attempt reads the same rows.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('parent-results-w1') AS id;
CREATE TEMP TABLE p AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', s.n), 'parent_results_p')) AS task_id
  FROM generate_series(1, 3) s(n);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['parent_results_p'], max_tasks => 3);
-- Results: {"n": 1}, [2, "two"] (any JSON), and NULL for the third.
CREATE TEMP TABLE f AS
SELECT p.n, x.* FROM p CROSS JOIN LATERAL taskforge.tf_finalize(p.task_id, (SELECT id FROM w), 1, 'succeeded',
                                                              result => CASE p.n WHEN 1 THEN '{"n": 1}'::jsonb WHEN 2 THEN '[2, "two"]' END) x;
-- The child names its parents in reverse order, one twice.
CREATE TEMP TABLE child AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'parent_results_child', max_attempts => 2,
    depends_on => (SELECT array_agg(task_id ORDER BY n DESC) || array_agg(task_id) FILTER (WHERE n = 2) FROM p));
CREATE TEMP TABLE lone AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'parent_results_lone');
CREATE TEMP TABLE cc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['parent_results_child', 'parent_results_lone'], max_tasks => 2);
SELECT results_eq('SELECT count(*)::int, count(DISTINCT task_id)::int FROM cc', $$VALUES (2, 2)$$, 'setup: the child and the lone task are claimed');

SELECT results_eq($$SELECT parent_task_id, state, result FROM taskforge.tf_parent_results((SELECT task_id FROM child), (SELECT id FROM w), 1)$$,
                  $$SELECT p.task_id, 'SUCCEEDED'::text, CASE p.n WHEN 1 THEN '{"n": 1}'::jsonb WHEN 2 THEN '[2, "two"]' END FROM p ORDER BY p.task_id$$,
                  'one row per distinct parent, in id order, with state and result (NULL when there is none)');
SELECT is((SELECT count(*)::int FROM taskforge.tf_parent_results((SELECT task_id FROM child), (SELECT id FROM w), 1)), 3,
          'three parents, the duplicate counted once');
SELECT is_empty($$SELECT * FROM taskforge.tf_parent_results((SELECT task_id FROM lone), (SELECT id FROM w), 1)$$,
                'a task without parents: no rows');
-- Attempt 2 reads the same rows.
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM child), (SELECT id FROM w), 1, 'retryable');
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() WHERE task_id = (SELECT task_id FROM child);
CREATE TEMP TABLE pr AS SELECT * FROM taskforge.tf_promote();
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['parent_results_child']);
SELECT results_eq('SELECT attempt_number FROM c2', ARRAY[2], 'setup: attempt 2 claimed');
SELECT results_eq($$SELECT parent_task_id, result FROM taskforge.tf_parent_results((SELECT task_id FROM child), (SELECT id FROM w), 2)$$,
                  $$SELECT p.task_id, CASE p.n WHEN 1 THEN '{"n": 1}'::jsonb WHEN 2 THEN '[2, "two"]' END FROM p ORDER BY p.task_id$$,
                  'attempt 2 reads the same parents and results');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
