-- tf_prune keeps a terminal parent while one of its children is not terminal (BLOCKED or RUNNING), so the child's handler can still read its result; once the children are terminal the parent goes, and the dependency edges of every deleted task (as child or as parent) are deleted with it.
BEGIN;
SELECT plan(11);
-- tf_prune acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
DELETE FROM taskforge.task_dependencies;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('prune-deps-w1') AS id;
-- p1 -> k1 (RUNNING); p2, q -> k2 (BLOCKED on q); p3 -> k3 (SUCCEEDED just now).
CREATE TEMP TABLE p AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('p', s.name), 'prune_deps_p')) AS task_id
  FROM (VALUES ('p1'), ('p2'), ('p3'), ('q')) s(name);
CREATE TEMP TABLE k (name text, task_id bigint);
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$
    SELECT task_id FROM p WHERE name = p_name UNION ALL SELECT task_id FROM k WHERE name = p_name
$helper$;
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['prune_deps_p'], max_tasks => 3);
CREATE TEMP TABLE f1 AS
SELECT x.* FROM p CROSS JOIN LATERAL taskforge.tf_finalize(p.task_id, (SELECT id FROM w), 1, 'succeeded', result => jsonb_build_object('r', p.name)) x
 WHERE p.name IN ('p1', 'p2', 'p3');
INSERT INTO k SELECT 'k1', task_id FROM taskforge.tf_submit('noop', queue => 'prune_deps_k1', depends_on => ARRAY[pg_temp.id('p1')]);
INSERT INTO k SELECT 'k2', task_id FROM taskforge.tf_submit('noop', queue => 'prune_deps_k2', depends_on => ARRAY[pg_temp.id('p2'), pg_temp.id('q')]);
INSERT INTO k SELECT 'k3', task_id FROM taskforge.tf_submit('noop', queue => 'prune_deps_k3', depends_on => ARRAY[pg_temp.id('p3')]);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['prune_deps_k1', 'prune_deps_k3'], max_tasks => 2);
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('k3'), (SELECT id FROM w), 1, 'succeeded');
-- The parents finished two hours ago.
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '2 hours' WHERE task_id IN (SELECT task_id FROM p WHERE name <> 'q');
CREATE FUNCTION pg_temp.left_over() RETURNS SETOF text LANGUAGE sql AS $helper$
    SELECT name FROM (SELECT name, task_id FROM p UNION ALL SELECT name, task_id FROM k) x
     WHERE EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.task_id = x.task_id) ORDER BY name
$helper$;
SELECT results_eq($$SELECT x.name, t.state::text FROM (SELECT * FROM p UNION ALL SELECT * FROM k) x JOIN taskforge.tasks t USING (task_id) ORDER BY x.name$$,
                  $$VALUES ('k1'::text, 'RUNNING'::text), ('k2', 'BLOCKED'), ('k3', 'SUCCEEDED'), ('p1', 'SUCCEEDED'), ('p2', 'SUCCEEDED'),
                           ('p3', 'SUCCEEDED'), ('q', 'QUEUED')$$,
                  'setup: three old terminal parents, children RUNNING, BLOCKED and just SUCCEEDED');

SELECT is(taskforge.tf_prune(older_than_seconds => 3600), 1, 'only p3, whose child is terminal, is deleted');
SELECT results_eq('SELECT * FROM pg_temp.left_over()', ARRAY['k1', 'k2', 'k3', 'p1', 'p2', 'q'],
                  'p1 (child RUNNING) and p2 (child BLOCKED) are kept; k3 is recent and stays');
SELECT is_empty($$SELECT * FROM taskforge.task_dependencies WHERE parent_task_id = pg_temp.id('p3') OR child_task_id = pg_temp.id('p3')$$,
                'the edge from k3 to the deleted p3 is gone');
SELECT is((SELECT count(*)::int FROM taskforge.task_dependencies), 3, 'the edges of the kept tasks remain (k1-p1, k2-p2, k2-q)');
SELECT results_eq($$SELECT parent_task_id, result FROM taskforge.tf_parent_results(pg_temp.id('k1'), (SELECT id FROM w), 1)$$,
                  $$SELECT pg_temp.id('p1'), '{"r": "p1"}'::jsonb$$, 'the running child still reads its kept parent''s result');

-- The children end: k1 succeeds, k2 is cancelled; all finished long ago now.
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('k1'), (SELECT id FROM w), 1, 'succeeded');
CREATE TEMP TABLE x2 AS SELECT * FROM taskforge.tf_cancel(pg_temp.id('k2'));
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '90 minutes' WHERE task_id IN (SELECT task_id FROM k);
SELECT is(taskforge.tf_prune(older_than_seconds => 3600), 5, 'with every child terminal, the parents and children go (p1, p2, k1, k2, k3)');
SELECT results_eq('SELECT * FROM pg_temp.left_over()', ARRAY['q'], 'only the live q is left');
SELECT is_empty($$SELECT * FROM taskforge.task_dependencies$$, 'every edge of the deleted tasks is gone, k2-q too');
SELECT is((SELECT has_children FROM taskforge.tasks WHERE task_id = pg_temp.id('q')), true,
          'q keeps its has_children flag (its transitions only test it)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
