-- tf_task_dependencies lists each dependency edge once with both tasks' type and state, the child's parents_pending, and the parent's result and finish time, following the tasks as they change.
BEGIN;
SELECT plan(6);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-deps-w1') AS id;
CREATE TEMP TABLE a AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'view_deps_a');
CREATE TEMP TABLE b AS SELECT task_id FROM taskforge.tf_submit('echo', queue => 'view_deps_b');
CREATE TEMP TABLE c AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'view_deps_c',
    depends_on => ARRAY[(SELECT task_id FROM b), (SELECT task_id FROM a)]);
CREATE TEMP TABLE ca AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_deps_a']);
CREATE TEMP TABLE fa AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM a), (SELECT id FROM w), 1, 'succeeded', result => '{"a": 1}');

SELECT results_eq($$SELECT child_task_id, child_task_type, child_state, child_parents_pending, parent_task_id, parent_task_type, parent_state,
                           parent_result, parent_finished_at
                      FROM taskforge.tf_task_dependencies WHERE child_task_id = (SELECT task_id FROM c) ORDER BY parent_task_id$$,
                  $$SELECT (SELECT task_id FROM c), 'noop'::text, 'BLOCKED'::text, 1, x.task_id, x.task_type, x.state::text, x.result, x.finished_at
                      FROM taskforge.tasks x WHERE x.task_id IN ((SELECT task_id FROM a), (SELECT task_id FROM b)) ORDER BY x.task_id$$,
                  'one row per edge of the child, with both ends as they are');
SELECT results_eq($$SELECT parent_state, parent_result, parent_finished_at IS NOT NULL FROM taskforge.tf_task_dependencies
                     WHERE child_task_id = (SELECT task_id FROM c) ORDER BY parent_task_id$$,
                  $$VALUES ('SUCCEEDED'::text, '{"a": 1}'::jsonb, true), ('QUEUED', NULL, false)$$,
                  'a''s result and finish are shown, b has none yet');
SELECT results_eq($$SELECT child_task_id FROM taskforge.tf_task_dependencies WHERE parent_task_id = (SELECT task_id FROM b)$$,
                  'SELECT task_id FROM c', 'a parent''s children are its rows by parent_task_id');
SELECT is((SELECT count(*)::int FROM taskforge.tf_task_dependencies
            WHERE child_task_id = (SELECT task_id FROM c) OR parent_task_id = (SELECT task_id FROM c)), 2,
          'two edges in all: c has no children');
-- b fails: the child's row follows.
CREATE TEMP TABLE cb AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_deps_b']);
CREATE TEMP TABLE fb AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM b), (SELECT id FROM w), 1, 'failed', error => '{"type": "bug"}');
SELECT results_eq($$SELECT child_state, child_parents_pending, parent_state, parent_result FROM taskforge.tf_task_dependencies
                     WHERE child_task_id = (SELECT task_id FROM c) ORDER BY parent_task_id$$,
                  $$VALUES ('CANCELLED'::text, 0, 'SUCCEEDED'::text, '{"a": 1}'::jsonb), ('CANCELLED', 0, 'FAILED', NULL)$$,
                  'b FAILED: the child is CANCELLED on both rows, b has no result');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
