-- tf_finalize 'retryable' with budget left: attempt FAILED, task RETRYING with scheduled_at = now + the type's backoff; on the last attempt: task FAILED.
BEGIN;
SELECT plan(24);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('finretry.fixed', 7, 300, 0)$$, 'register a type with base 7 s, no jitter');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_retryable') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('finretry.fixed', '{}', 'q_finalize_retryable', max_attempts => 3);

-- Attempt 1: backoff 7 s.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_retryable']);
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'retryable',
                                                            '{"ignored": true}', '{"type": "Timeout", "message": "later"}');
CREATE TEMP TABLE task1 AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE att1 AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id) WHERE attempt_number = 1;
SELECT is((SELECT accepted FROM f1), true, 'the call is accepted');
SELECT is((SELECT task_state FROM f1), 'RETRYING', 'with budget left the task is RETRYING');
SELECT is((SELECT state FROM task1), 'RETRYING', 'the stored task is RETRYING');
SELECT is((SELECT state FROM att1), 'FAILED', 'the attempt is FAILED');
SELECT is((SELECT outcome FROM att1), 'retryable', 'the attempt outcome is retryable');
SELECT is((SELECT scheduled_at FROM task1) - (SELECT finished_at FROM att1), interval '7 seconds',
    'scheduled_at = finish time + 7 s (base * 2^0)');
SELECT ok((SELECT scheduled_at > clock_timestamp() FROM task1), 'the retry is in the future');
SELECT ok((SELECT finished_at IS NULL FROM task1), 'a RETRYING task is not finished');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM task1), 'owner and lease are cleared');
SELECT is((SELECT last_error FROM task1), '{"type": "Timeout", "message": "later"}'::jsonb, 'the task stores the error');
SELECT is((SELECT error FROM att1), '{"type": "Timeout", "message": "later"}'::jsonb, 'the attempt stores the error');
SELECT ok((SELECT result IS NULL FROM att1), 'no result is stored for a failure');

-- Attempt 2: backoff 14 s.
UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM s WHERE t.task_id = s.task_id;
CREATE TEMP TABLE p1 AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_retryable']);
SELECT is((SELECT attempt_number FROM c2), 2, 'the retry runs as attempt 2');
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 2, 'retryable');
SELECT is((SELECT task_state FROM f2), 'RETRYING', 'attempt 2 of 3: RETRYING again');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM s) AND a.attempt_number = 2), interval '14 seconds',
    'scheduled_at = finish time + 14 s (base * 2^1)');

-- Attempt 3 is the last allowed: FAILED.
UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM s WHERE t.task_id = s.task_id;
CREATE TEMP TABLE p2 AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_retryable']);
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 3, 'retryable', error => '{"message": "still down"}');
SELECT is((SELECT task_state FROM f3), 'FAILED', 'a retryable failure of the last allowed attempt fails the task');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN s USING (task_id)), 'FAILED', 'the stored task is FAILED');
SELECT ok((SELECT finished_at IS NOT NULL FROM taskforge.tasks JOIN s USING (task_id)), 'the FAILED task is finished');
SELECT is((SELECT last_error FROM taskforge.tasks JOIN s USING (task_id)), '{"message": "still down"}'::jsonb, 'the last error is stored');
SELECT is((SELECT array_agg(a.state || '/' || a.outcome ORDER BY attempt_number) FROM taskforge.attempts a JOIN s USING (task_id)),
    ARRAY['FAILED/retryable', 'FAILED/retryable', 'FAILED/retryable'], 'three failed attempts are kept');

-- The default policy of a built-in type: 2 s with 20 % jitter.
CREATE TEMP TABLE sd AS SELECT * FROM taskforge.tf_submit('retryable_fail', '{}', 'q_finalize_retryable_default');
CREATE TEMP TABLE cd AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_retryable_default']);
CREATE TEMP TABLE fd AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sd), (SELECT id FROM w), 1, 'retryable');
SELECT is((SELECT task_state FROM fd), 'RETRYING', 'retryable_fail with budget left is RETRYING');
SELECT ok((SELECT t.scheduled_at - a.finished_at BETWEEN interval '1.6 seconds' AND interval '2.4 seconds'
             FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id) WHERE t.task_id = (SELECT task_id FROM sd)),
    'the default backoff after attempt 1 is 2 s +/- 20 %');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
