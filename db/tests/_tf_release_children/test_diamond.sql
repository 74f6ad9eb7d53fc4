-- _tf_release_children on a diamond (A; B, C on A; D on B and C): A's success releases B and C; B failing permanently (retryable failures until its budget is spent) cancels D at once, while C still runs and succeeds, and C's success does not bring D back.
BEGIN;
SELECT plan(9);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-diamond-w1') AS id;
CREATE TEMP TABLE g AS
SELECT r.n - 1 AS i, r.task_id FROM taskforge.tf_submit_many('[
    {"task_type": "noop", "queue": "release_diamond_a"},
    {"task_type": "noop", "queue": "release_diamond_b", "max_attempts": 2, "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "release_diamond_c", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "release_diamond_d", "depends_on_positions": [1, 2]}]') WITH ORDINALITY r(task_id, state, created, n);
CREATE FUNCTION pg_temp.id(p_i int) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM g WHERE i = p_i $helper$;
CREATE FUNCTION pg_temp.states() RETURNS TABLE(i int, state text, parents_pending int) LANGUAGE sql AS $helper$
    SELECT g.i::int, t.state::text, t.parents_pending FROM g JOIN taskforge.tasks t USING (task_id) ORDER BY g.i
$helper$;

CREATE TEMP TABLE ca AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_diamond_a']);
CREATE TEMP TABLE fa AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(0), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq('SELECT * FROM pg_temp.states()',
                  $$VALUES (0, 'SUCCEEDED'::text, 0), (1, 'QUEUED', 0), (2, 'QUEUED', 0), (3, 'BLOCKED', 2)$$,
                  'A SUCCEEDED: B and C QUEUED, D waits for both');
-- B: attempt 1 retryable (budget left), attempt 2 retryable (budget spent) -> FAILED.
CREATE TEMP TABLE cb AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_diamond_b']);
CREATE TEMP TABLE fb1 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(1), (SELECT id FROM w), 1, 'retryable');
SELECT results_eq('SELECT * FROM pg_temp.states()',
                  $$VALUES (0, 'SUCCEEDED'::text, 0), (1, 'RETRYING', 0), (2, 'QUEUED', 0), (3, 'BLOCKED', 2)$$,
                  'B RETRYING: D still waits for both');
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() WHERE task_id = pg_temp.id(1);
CREATE TEMP TABLE pb AS SELECT * FROM taskforge.tf_promote();
CREATE TEMP TABLE cb2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_diamond_b']);
CREATE TEMP TABLE fb2 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(1), (SELECT id FROM w), 2, 'retryable');
SELECT results_eq('SELECT task_state FROM fb2', ARRAY['FAILED'], 'B''s budget is spent: FAILED');
SELECT results_eq('SELECT * FROM pg_temp.states()',
                  $$VALUES (0, 'SUCCEEDED'::text, 0), (1, 'FAILED', 0), (2, 'QUEUED', 0), (3, 'CANCELLED', 0)$$,
                  'D is CANCELLED at once; C, not below B, is still QUEUED');
SELECT results_eq($$SELECT cancel_reason, finished_at = (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id(1))
                      FROM taskforge.tasks WHERE task_id = pg_temp.id(3)$$,
                  $$VALUES ('dependency_failed'::text, true)$$, 'D: dependency_failed, at B''s finish');
-- C still runs.
SELECT results_eq($$SELECT task_id, attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_diamond_c', 'release_diamond_d'],
                                                                           max_tasks => 5)$$,
                  $$SELECT pg_temp.id(2), 1$$, 'C is claimed (D is not)');
CREATE TEMP TABLE fc AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(2), (SELECT id FROM w), 1, 'succeeded', result => '{"c": 1}');
SELECT results_eq('SELECT accepted, task_state FROM fc', $$VALUES (true, 'SUCCEEDED'::text)$$, 'C SUCCEEDED');
SELECT results_eq('SELECT * FROM pg_temp.states()',
                  $$VALUES (0, 'SUCCEEDED'::text, 0), (1, 'FAILED', 0), (2, 'SUCCEEDED', 0), (3, 'CANCELLED', 0)$$,
                  'C''s success leaves D CANCELLED with no attempt');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
