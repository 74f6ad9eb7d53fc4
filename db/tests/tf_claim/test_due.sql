-- tf_claim takes only due QUEUED tasks: not future ones, not RETRYING ones whose backoff is over, not running or finished ones.
BEGIN;
SELECT plan(12);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('claimdue.nodelay', 0, 0, 0)$$, 'register a task type without backoff');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_due') AS id;
CREATE TEMP TABLE future AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_due', scheduled_at => clock_timestamp() + interval '10 minutes');
CREATE TEMP TABLE due AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_due');

CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due'], max_tasks => 10);
SELECT is((SELECT array_agg(task_id) FROM c1), ARRAY[(SELECT task_id FROM due)], 'only the due task is claimed');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due'], max_tasks => 10)), 0,
    'with only a running and a future task, nothing is eligible');
SELECT is((SELECT t.state::text FROM taskforge.tasks t JOIN future USING (task_id)), 'QUEUED', 'the future task stays QUEUED');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN future USING (task_id)), 0, 'the future task got no attempt');

-- Time passes: the future task is due now.
UPDATE taskforge.tasks t SET scheduled_at = clock_timestamp() - interval '1 millisecond' FROM future f WHERE t.task_id = f.task_id;
SELECT is((SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due'], max_tasks => 10)),
    (SELECT task_id FROM future), 'a task whose scheduled_at has passed is claimed');

-- A RETRYING task whose backoff is over is not claimable before tf_promote.
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_submit('claimdue.nodelay', '{}', 'q_claim_due_retry');
CREATE TEMP TABLE rc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due_retry']);
CREATE TEMP TABLE rf AS SELECT f.* FROM rc, taskforge.tf_finalize(rc.task_id, (SELECT id FROM w), rc.attempt_number, 'retryable') f;
SELECT is((SELECT task_state FROM rf), 'RETRYING', 'a retryable failure leaves the task RETRYING');
SELECT ok((SELECT scheduled_at <= clock_timestamp() FROM taskforge.tasks JOIN r USING (task_id)), 'its backoff (zero) is over');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due_retry'], max_tasks => 10)), 0,
    'a RETRYING task is not claimed, even when due');

-- Finished tasks are never claimed.
CREATE TEMP TABLE done AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_due_done');
CREATE TEMP TABLE dc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due_done']);
CREATE TEMP TABLE df AS SELECT f.* FROM dc, taskforge.tf_finalize(dc.task_id, (SELECT id FROM w), dc.attempt_number, 'succeeded') f;
CREATE TEMP TABLE cancelled AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_claim_due_done');
CREATE TEMP TABLE cc AS SELECT x.* FROM cancelled, taskforge.tf_cancel(cancelled.task_id) x;
SELECT is((SELECT array_agg(t.state::text ORDER BY t.state) FROM taskforge.tasks t WHERE t.queue = 'q_claim_due_done'),
    ARRAY['CANCELLED', 'SUCCEEDED'], 'the queue holds a succeeded and a cancelled task');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_due_done'], max_tasks => 10)), 0,
    'succeeded and cancelled tasks are not claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
