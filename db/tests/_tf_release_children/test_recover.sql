-- _tf_release_children through tf_recover: a parent whose last allowed attempt lost its lease ends FAILED and its BLOCKED descendants (child and grandchild) CANCELLED dependency_failed at the parent's finish; a parent with a cancel request whose lease expires ends CANCELLED with the same effect; a parent with budget left is requeued and its child keeps waiting.
BEGIN;
SELECT plan(9);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-recover-w1') AS id;
-- spent: budget 1; asked: a cancel request; again: budget 3.
CREATE TEMP TABLE p AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('p', s.name), 'release_recover_parent',
                                                        max_attempts => s.budget)) AS task_id
  FROM (VALUES ('spent', 1), ('asked', 3), ('again', 3)) s(name, budget);
CREATE TEMP TABLE k AS
SELECT p.name, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('k', p.name), 'release_recover_child',
                                                        depends_on => ARRAY[p.task_id])) AS task_id
  FROM p;
CREATE TEMP TABLE g AS
SELECT k.name, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('g', k.name), 'release_recover_grandchild',
                                                        depends_on => ARRAY[k.task_id])) AS task_id
  FROM k;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_recover_parent'], max_tasks => 3);
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM p WHERE name = 'asked'), 'stop');
-- Every lease has expired.
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '5 seconds' WHERE task_id IN (SELECT task_id FROM p);
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE a.task_id = t.task_id AND a.state = 'RUNNING' AND t.task_id IN (SELECT task_id FROM p);
SELECT results_eq('SELECT count(*)::int FROM c', ARRAY[3], 'setup: the three parents are RUNNING');
SELECT results_eq($$SELECT count(*)::int FROM taskforge.tasks WHERE state = 'BLOCKED'$$, ARRAY[6], 'setup: six descendants BLOCKED');

CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq('SELECT recovered, failed FROM r', $$VALUES (1, 2)$$, 'recovery requeues one parent and ends two');
SELECT results_eq($$SELECT p.name, t.state::text FROM p JOIN taskforge.tasks t USING (task_id) ORDER BY p.name$$,
                  $$VALUES ('again'::text, 'QUEUED'::text), ('asked', 'CANCELLED'), ('spent', 'FAILED')$$,
                  'spent FAILED (budget), asked CANCELLED (its request), again QUEUED');
SELECT results_eq($$SELECT k.name, t.state::text, t.cancel_reason FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.name$$,
                  $$VALUES ('again'::text, 'BLOCKED'::text, NULL::text), ('asked', 'CANCELLED', 'dependency_failed'),
                           ('spent', 'CANCELLED', 'dependency_failed')$$,
                  'the children of the ended parents are CANCELLED dependency_failed; the requeued parent''s child waits');
SELECT results_eq($$SELECT g.name, t.state::text, t.cancel_reason FROM g JOIN taskforge.tasks t USING (task_id) ORDER BY g.name$$,
                  $$VALUES ('again'::text, 'BLOCKED'::text, NULL::text), ('asked', 'CANCELLED', 'dependency_failed'),
                           ('spent', 'CANCELLED', 'dependency_failed')$$,
                  'and so are their grandchildren');
SELECT is_empty($$SELECT p.name FROM p JOIN taskforge.tasks pt USING (task_id)
                    JOIN k USING (name) JOIN taskforge.tasks kt ON kt.task_id = k.task_id
                    JOIN g USING (name) JOIN taskforge.tasks gt ON gt.task_id = g.task_id
                   WHERE p.name <> 'again' AND NOT (kt.finished_at = pt.finished_at AND gt.finished_at = pt.finished_at)$$,
                'child and grandchild finished at the parent''s finish (the recovery''s instant)');
SELECT is((SELECT parents_pending FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM k WHERE name = 'again')), 1,
          'the requeued parent''s child still waits for it');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
