-- tf_retry of a CANCELLED task: QUEUED again with the cancel request cleared; a task cancelled while running continues its attempt numbering.
BEGIN;
SELECT plan(9);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-cancelled-w1') AS id;
-- "waiting": cancelled before it ever ran. "ran": cancelled while running, then finalized as cancelled.
CREATE TEMP TABLE waiting AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'retry_cancelled_w', max_attempts => 2, idempotency_key => 'retry-cancelled-key');
CREATE TEMP TABLE x1 AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM waiting), 'oops');
CREATE TEMP TABLE ran AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'retry_cancelled_r', max_attempts => 1);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_cancelled_r']);
CREATE TEMP TABLE x2 AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM ran), 'stop');
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM ran), (SELECT id FROM w), 1, 'cancelled');

SELECT results_eq($$SELECT state::text FROM taskforge.tasks WHERE task_id IN ((SELECT task_id FROM waiting), (SELECT task_id FROM ran))$$,
                  ARRAY['CANCELLED', 'CANCELLED'], 'setup: both tasks CANCELLED');
SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry((SELECT task_id FROM waiting))$$,
                  $$VALUES ('QUEUED'::text, 2)$$, 'a never-run cancelled task is QUEUED with its budget');
SELECT results_eq($$SELECT state::text, cancel_requested_at, cancel_reason, finished_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM waiting)$$,
                  $$VALUES ('QUEUED'::text, NULL::timestamptz, NULL::text, NULL::timestamptz)$$,
                  'the cancel request, its reason and finished_at are cleared');
SELECT results_eq($$SELECT task_id, state, created FROM taskforge.tf_submit('noop', queue => 'retry_cancelled_w', max_attempts => 2, idempotency_key => 'retry-cancelled-key')$$,
                  $$SELECT task_id, 'QUEUED'::text, false FROM waiting$$, 'the task keeps its idempotency key and fingerprint');
SELECT results_eq($$SELECT attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_cancelled_w'])$$,
                  ARRAY[1], 'its first claim is attempt 1');

SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry((SELECT task_id FROM ran))$$,
                  $$VALUES ('QUEUED'::text, 2)$$, 'a task cancelled after 1 of 1 attempts gets budget 2');
SELECT results_eq($$SELECT attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_cancelled_r'])$$,
                  ARRAY[2], 'its next claim is attempt 2');
SELECT results_eq($$SELECT attempt_number::int, state::text FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM ran) ORDER BY attempt_number$$,
                  $$VALUES (1, 'CANCELLED'::text), (2, 'RUNNING')$$, 'history: the cancelled attempt, then the new one');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
