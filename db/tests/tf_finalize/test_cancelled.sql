-- tf_finalize 'cancelled' ends attempt and task CANCELLED (the handler gave up), storing the error and finishing the task.
BEGIN;
SELECT plan(9);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_cancelled') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('sleep', '{"ms": 10}', 'q_finalize_cancelled', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_cancelled']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'cancelled',
                                                           error => '{"message": "shutting down"}');
CREATE TEMP TABLE task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

SELECT is((SELECT accepted FROM f), true, 'the call is accepted');
SELECT is((SELECT task_state FROM f), 'CANCELLED', 'the returned state is CANCELLED');
SELECT is((SELECT state FROM task), 'CANCELLED', 'the task is CANCELLED although attempts remain');
SELECT ok((SELECT finished_at IS NOT NULL AND owner_worker_id IS NULL AND lease_expires_at IS NULL FROM task),
    'the task is finished, without owner or lease');
SELECT is((SELECT last_error FROM task), '{"message": "shutting down"}'::jsonb, 'the task stores the error');
SELECT is((SELECT state FROM att), 'CANCELLED', 'the attempt is CANCELLED');
SELECT is((SELECT outcome FROM att), 'cancelled', 'the attempt outcome is cancelled');
SELECT is((SELECT finished_at FROM att), (SELECT finished_at FROM task), 'attempt and task finish together');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
