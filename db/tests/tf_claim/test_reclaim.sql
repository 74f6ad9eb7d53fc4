-- tf_claim numbers attempts 1, 2, 3 ... across retries and recovery; promotion creates no attempt; history rows keep their states.
BEGIN;
SELECT plan(14);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('claimreclaim.nodelay', 0, 0, 0)$$, 'register a task type without backoff');
CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_claim_reclaim_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_claim_reclaim_2') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('claimreclaim.nodelay', '{}', 'q_claim_reclaim', max_attempts => 5);

-- Attempt 1 fails with a retryable error.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_claim_reclaim']);
SELECT is((SELECT attempt_number::int FROM c1), 1, 'the first claim is attempt 1');
CREATE TEMP TABLE f1 AS SELECT f.* FROM c1, taskforge.tf_finalize(c1.task_id, (SELECT id FROM w1), 1, 'retryable', error => '{"message": "try again"}') f;
SELECT is((SELECT task_state FROM f1), 'RETRYING', 'attempt 1 failed retryably');
-- Backoff over (pushed far into the past so the promotion batch surely includes it).
UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM s WHERE t.task_id = s.task_id;
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote(100000);
SELECT is((SELECT t.state::text FROM taskforge.tasks t JOIN s USING (task_id)), 'QUEUED', 'tf_promote requeued the task');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN s USING (task_id)), 1, 'promotion created no attempt');

-- Attempt 2 by another worker; its lease expires and tf_recover requeues the task.
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_claim_reclaim']);
SELECT is((SELECT attempt_number::int FROM c2), 2, 'the claim after a retry is attempt 2');
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM s WHERE t.task_id = s.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN s USING (task_id) WHERE a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover(100000);
SELECT is((SELECT t.state::text FROM taskforge.tasks t JOIN s USING (task_id)), 'QUEUED', 'tf_recover requeued the task');

-- Attempt 3.
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_claim_reclaim']);
SELECT is((SELECT attempt_number::int FROM c3), 3, 'the claim after recovery is attempt 3');
SELECT is((SELECT attempt_count FROM taskforge.tasks JOIN s USING (task_id)), 3, 'attempt_count is 3');
SELECT is((SELECT array_agg(attempt_number::int ORDER BY attempt_number) FROM taskforge.attempts JOIN s USING (task_id)),
    ARRAY[1, 2, 3], 'attempt rows 1, 2, 3 exist without gaps');
SELECT is((SELECT array_agg(a.state::text ORDER BY attempt_number) FROM taskforge.attempts a JOIN s USING (task_id)),
    ARRAY['FAILED', 'ABANDONED', 'RUNNING'], 'history keeps FAILED, ABANDONED and the RUNNING attempt');
SELECT is((SELECT array_agg(a.worker_id ORDER BY attempt_number) FROM taskforge.attempts a JOIN s USING (task_id)),
    ARRAY[(SELECT id FROM w1), (SELECT id FROM w2), (SELECT id FROM w1)], 'each attempt names the worker that ran it');
SELECT is((SELECT owner_worker_id FROM taskforge.tasks JOIN s USING (task_id)), (SELECT id FROM w1), 'the task is owned by the latest claimer');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
