-- tf_finalize_many 'failed' (an ordinary error) ends the task FAILED at once, budget left or not; the error is stored on task and attempt, a result given with it is not.
BEGIN;
SELECT plan(9);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_failed') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_failed', max_attempts => 5)) AS task_id
  FROM generate_series(1, 3) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_failed'], 60, max_tasks => 10);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize_many(
    (SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k), ARRAY[1, 1, 1], ARRAY['failed', 'failed', 'failed'],
    ARRAY['{"partial": 1}'::jsonb, NULL, NULL],
    ARRAY['{"type": "ValueError", "message": "bad input"}'::jsonb, NULL, '{"type": "KeyError", "message": "k"}'::jsonb]);

SELECT is((SELECT array_agg(accepted::text || '/' || task_state ORDER BY task_id) FROM f),
    ARRAY['true/FAILED', 'true/FAILED', 'true/FAILED'], 'every failed element is accepted and the task is FAILED');
SELECT is((SELECT array_agg(DISTINCT t.state::text) FROM k JOIN taskforge.tasks t USING (task_id)), ARRAY['FAILED'],
    'the stored tasks are FAILED although 4 attempts remain each');
SELECT is((SELECT array_agg(DISTINCT a.state || '/' || a.outcome) FROM k JOIN taskforge.attempts a USING (task_id)),
    ARRAY['FAILED/failed'], 'every attempt is FAILED with outcome failed');
SELECT results_eq($$SELECT k.n, t.last_error, a.error FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id) ORDER BY k.n$$,
                  $$VALUES (1, '{"type": "ValueError", "message": "bad input"}'::jsonb, '{"type": "ValueError", "message": "bad input"}'::jsonb),
                           (2, NULL, NULL),
                           (3, '{"type": "KeyError", "message": "k"}'::jsonb, '{"type": "KeyError", "message": "k"}'::jsonb)$$,
                  'each element''s error is stored on its task and attempt (NULL stays NULL)');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)
            WHERE t.result IS NULL AND a.result IS NULL), 3, 'no result is stored for a failure');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id)
            WHERE t.finished_at IS NOT NULL AND t.owner_worker_id IS NULL AND t.lease_expires_at IS NULL), 3,
    'the tasks are finished, without owner or lease');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.attempts a USING (task_id) WHERE a.finished_at IS NOT NULL), 3, 'the attempts are finished');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_failed'], max_tasks => 10)), 0,
    'FAILED tasks are not claimed again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
