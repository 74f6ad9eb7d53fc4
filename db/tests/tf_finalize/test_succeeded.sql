-- tf_finalize 'succeeded' ends attempt and task SUCCEEDED together, stores the result, clears owner and lease, and sets finished_at.
BEGIN;
SELECT plan(20);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_succeeded') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('echo', '{"x": 1}', 'q_finalize_succeeded');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_succeeded']);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'succeeded',
                                                           '{"answer": 42}', '{"message": "ignored on success"}');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

SELECT is((SELECT count(*)::int FROM f), 1, 'tf_finalize returns one row');
SELECT is((SELECT accepted FROM f), true, 'the call is accepted');
SELECT is((SELECT task_state FROM f), 'SUCCEEDED', 'the returned task_state is SUCCEEDED');
SELECT ok((SELECT reason IS NULL FROM f), 'an accepted call has no reason');

SELECT is((SELECT state FROM task), 'SUCCEEDED', 'the task is SUCCEEDED');
SELECT is((SELECT result FROM task), '{"answer": 42}'::jsonb, 'the task stores the result');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM task), 'owner and lease are cleared');
SELECT ok((SELECT finished_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM task), 'finished_at is the database time of the call');
SELECT ok((SELECT last_error IS NULL FROM task), 'an error given with a success is not stored on the task');
SELECT is((SELECT attempt_count FROM task), 1, 'attempt_count stays 1');

SELECT is((SELECT state FROM att), 'SUCCEEDED', 'the attempt is SUCCEEDED');
SELECT is((SELECT outcome FROM att), 'succeeded', 'the attempt outcome is succeeded');
SELECT is((SELECT result FROM att), '{"answer": 42}'::jsonb, 'the attempt stores the result');
SELECT ok((SELECT error IS NULL FROM att), 'the attempt stores no error');
SELECT is((SELECT finished_at FROM att), (SELECT finished_at FROM task), 'attempt and task finish at the same instant');

-- Any JSON is a valid result, and so is none.
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_succeeded');
CREATE TEMP TABLE s3 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_succeeded');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_succeeded'], max_tasks => 2);
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s2), (SELECT id FROM w), 1, 'succeeded');
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s3), (SELECT id FROM w), 1, 'succeeded', '[1, "two", null]');
SELECT is((SELECT accepted FROM f2), true, 'a success without a result is accepted');
SELECT ok((SELECT result IS NULL FROM taskforge.tasks JOIN s2 USING (task_id)), 'no result is stored as NULL');
SELECT is((SELECT accepted FROM f3), true, 'a non-object result is accepted');
SELECT is((SELECT result FROM taskforge.attempts JOIN s3 USING (task_id)), '[1, "two", null]'::jsonb, 'a JSON array result is stored as given');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
