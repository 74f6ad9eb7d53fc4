-- tf_finalize 'failed' (an ordinary error) ends attempt and task FAILED even with budget left, storing the error and no result.
BEGIN;
SELECT plan(15);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_failed') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('fail', '{}', 'q_finalize_failed', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_failed']);
CREATE TEMP TABLE before AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'failed',
                                                           '{"partial": true}', '{"type": "ValueError", "message": "boom"}');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

SELECT is((SELECT accepted FROM f), true, 'the call is accepted');
SELECT is((SELECT task_state FROM f), 'FAILED', 'an ordinary error fails the task although 2 attempts remain');
SELECT ok((SELECT reason IS NULL FROM f), 'no reason');
SELECT is((SELECT state FROM task), 'FAILED', 'the task is FAILED');
SELECT is((SELECT last_error FROM task), '{"type": "ValueError", "message": "boom"}'::jsonb, 'the task stores the error');
SELECT ok((SELECT result IS NULL FROM task), 'a result given with a failure is not stored');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM task), 'owner and lease are cleared');
SELECT ok((SELECT finished_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM task), 'finished_at is set');
SELECT is((SELECT scheduled_at FROM task), (SELECT scheduled_at FROM before), 'scheduled_at is unchanged');
SELECT is((SELECT state FROM att), 'FAILED', 'the attempt is FAILED');
SELECT is((SELECT outcome FROM att), 'failed', 'the attempt outcome is failed');
SELECT is((SELECT error FROM att), '{"type": "ValueError", "message": "boom"}'::jsonb, 'the attempt stores the error');
SELECT ok((SELECT result IS NULL FROM att), 'the attempt stores no result');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_failed'])), 0, 'a FAILED task is not claimed again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
