-- tf_submit's depends_on: a child of unfinished (QUEUED, RUNNING) parents starts BLOCKED with parents_pending = their number, of SUCCEEDED parents only QUEUED, of a FAILED or CANCELLED parent CANCELLED 'dependency_failed' with no attempt; duplicates count once; the edges are stored and the parents marked has_children.
BEGIN;
SELECT plan(20);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('submit-deps-w1') AS id;
-- One parent per state: q QUEUED, r RUNNING, s SUCCEEDED, f FAILED, x CANCELLED.
CREATE TEMP TABLE p AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', queue => 'submit_deps_' || s.name)) AS task_id
  FROM (VALUES ('q'), ('r'), ('s'), ('f'), ('x')) s(name);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_deps_r', 'submit_deps_s', 'submit_deps_f'], max_tasks => 3);
CREATE TEMP TABLE fin AS
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM p WHERE name = 's'), (SELECT id FROM w), 1, 'succeeded')
UNION ALL
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM p WHERE name = 'f'), (SELECT id FROM w), 1, 'failed');
CREATE TEMP TABLE xc AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM p WHERE name = 'x'));
SELECT results_eq($$SELECT p.name, t.state::text FROM p JOIN taskforge.tasks t USING (task_id) ORDER BY p.name$$,
                  $$VALUES ('f'::text, 'FAILED'::text), ('q', 'QUEUED'), ('r', 'RUNNING'), ('s', 'SUCCEEDED'), ('x', 'CANCELLED')$$,
                  'setup: one parent in each state');
SELECT is_empty($$SELECT * FROM p JOIN taskforge.tasks t USING (task_id) WHERE t.has_children$$, 'setup: no parent has children yet');

-- ids(names): the parents' ids, in the order given.
CREATE FUNCTION pg_temp.ids(p_names text[]) RETURNS bigint[] LANGUAGE sql AS $helper$
    SELECT array_agg((SELECT task_id FROM p WHERE name = n) ORDER BY o) FROM unnest(p_names) WITH ORDINALITY u(n, o);
$helper$;
CREATE TEMP TABLE k AS
SELECT s.name, r.task_id, r.state, r.created
  FROM (VALUES ('on_q_r', ARRAY['q', 'r']), ('on_q_s', ARRAY['q', 's']), ('on_s', ARRAY['s']), ('on_s_f', ARRAY['s', 'f']),
               ('on_q_x', ARRAY['q', 'x']), ('dup', ARRAY['r', 'q', 'r', 'q', 'q'])) s(name, parents)
 CROSS JOIN LATERAL taskforge.tf_submit('noop', queue => 'submit_deps_child', depends_on => pg_temp.ids(s.parents)) r;
CREATE TEMP TABLE none_given AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_none', depends_on => '{}');

SELECT results_eq($$SELECT name, state, created FROM k ORDER BY name$$,
                  $$VALUES ('dup'::text, 'BLOCKED'::text, true), ('on_q_r', 'BLOCKED', true), ('on_q_s', 'BLOCKED', true),
                           ('on_q_x', 'CANCELLED', true), ('on_s', 'QUEUED', true), ('on_s_f', 'CANCELLED', true)$$,
                  'tf_submit returns BLOCKED, QUEUED or CANCELLED as the parents are');
SELECT results_eq($$SELECT k.name, t.state::text, t.parents_pending FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.name$$,
                  $$VALUES ('dup'::text, 'BLOCKED'::text, 2), ('on_q_r', 'BLOCKED', 2), ('on_q_s', 'BLOCKED', 1),
                           ('on_q_x', 'CANCELLED', 0), ('on_s', 'QUEUED', 0), ('on_s_f', 'CANCELLED', 0)$$,
                  'stored states; parents_pending counts the parents not SUCCEEDED (0 unless BLOCKED)');
SELECT results_eq($$SELECT d.parent_task_id FROM taskforge.task_dependencies d WHERE d.child_task_id = (SELECT task_id FROM k WHERE name = 'on_q_r')
                    ORDER BY 1$$,
                  $$SELECT task_id FROM p WHERE name IN ('q', 'r') ORDER BY 1$$, 'the edges of a child are its parents');
SELECT results_eq($$SELECT d.parent_task_id FROM taskforge.task_dependencies d WHERE d.child_task_id = (SELECT task_id FROM k WHERE name = 'dup')
                    ORDER BY 1$$,
                  $$SELECT task_id FROM p WHERE name IN ('q', 'r') ORDER BY 1$$,
                  'duplicates count once: r, q, r, q, q is two edges');
SELECT is((SELECT count(*)::int FROM taskforge.task_dependencies WHERE child_task_id IN (SELECT task_id FROM k)), 11,
          'every child has one edge per distinct parent, the cancelled ones too (2+2+1+2+2+2)');
SELECT results_eq($$SELECT p.name, t.has_children FROM p JOIN taskforge.tasks t USING (task_id) ORDER BY p.name$$,
                  $$VALUES ('f'::text, true), ('q', true), ('r', true), ('s', true), ('x', true)$$,
                  'every parent is marked has_children, whatever its state');
SELECT is_empty($$SELECT * FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.has_children$$, 'the children themselves have no children');

-- A FAILED or CANCELLED parent: the child ends CANCELLED at once, no attempt, finished when created.
SELECT results_eq($$SELECT t.cancel_reason, t.attempt_count, t.finished_at = t.created_at, t.cancel_requested_at = t.created_at
                      FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.name IN ('on_s_f', 'on_q_x') ORDER BY k.name$$,
                  $$VALUES ('dependency_failed'::text, 0, true, true), ('dependency_failed', 0, true, true)$$,
                  'a child of a FAILED or CANCELLED parent is CANCELLED dependency_failed, finished and cancelled at its creation');
SELECT is_empty($$SELECT * FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM k)$$, 'no child has an attempt');
SELECT is((SELECT state::text FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM k WHERE name = 'on_q_r')), 'BLOCKED',
          'tf_tasks shows BLOCKED');
SELECT is((SELECT parents_pending FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM k WHERE name = 'on_q_r')), 2,
          'tf_tasks shows parents_pending');

-- An empty depends_on is none.
SELECT results_eq('SELECT state, created FROM none_given', $$VALUES ('QUEUED'::text, true)$$, 'depends_on => ''{}'' is no parent: QUEUED');
SELECT is_empty($$SELECT * FROM taskforge.task_dependencies WHERE child_task_id = (SELECT task_id FROM none_given)$$, 'and no edge');

-- The QUEUED child of SUCCEEDED parents is due now and claimable at once.
SELECT results_eq($$SELECT task_id, attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_deps_child'], max_tasks => 10)$$,
                  $$SELECT task_id, 1 FROM k WHERE name = 'on_s'$$,
                  'of the children only the one whose parents all SUCCEEDED is claimed');

-- A parent SUCCEEDED later counts down the BLOCKED children it has (rules of taskforge._tf_release_children).
CREATE TEMP TABLE fr AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM p WHERE name = 'r'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT k.name, t.state::text, t.parents_pending FROM k JOIN taskforge.tasks t USING (task_id)
                     WHERE k.name IN ('dup', 'on_q_r') ORDER BY k.name$$,
                  $$VALUES ('dup'::text, 'BLOCKED'::text, 1), ('on_q_r', 'BLOCKED', 1)$$,
                  'r SUCCEEDED: its children wait for q only');
SELECT results_eq($$SELECT k.name, t.state::text FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.name IN ('on_s_f', 'on_q_x') ORDER BY k.name$$,
                  $$VALUES ('on_q_x'::text, 'CANCELLED'::text), ('on_s_f', 'CANCELLED')$$, 'a cancelled child stays CANCELLED');
SELECT results_eq($$SELECT state FROM taskforge.tf_submit('noop', queue => 'submit_deps_child', depends_on => pg_temp.ids(ARRAY['r', 's']))$$,
                  ARRAY['QUEUED'], 'a new child of r and s (both SUCCEEDED now) is QUEUED');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
