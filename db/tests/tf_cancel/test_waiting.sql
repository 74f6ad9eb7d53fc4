-- tf_cancel: a QUEUED or RETRYING task becomes CANCELLED at once (finished_at set, reason stored) and is never claimed or promoted afterwards.
BEGIN;
SELECT plan(14);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cancel-waiting-w1') AS id;
CREATE TEMP TABLE q AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_waiting_q');
CREATE TEMP TABLE r AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_waiting_r');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_waiting_r']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM r), (SELECT id FROM w), 1, 'retryable');

CREATE TEMP TABLE xq AS SELECT *, clock_timestamp() AS after_call FROM taskforge.tf_cancel((SELECT task_id FROM q), 'no longer needed');
SELECT results_eq('SELECT task_state, cancel_requested FROM xq', $$VALUES ('CANCELLED'::text, true)$$,
                  'QUEUED -> CANCELLED, reported with cancel_requested = true');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM q)), 'CANCELLED', 'the QUEUED task is CANCELLED');
SELECT ok((SELECT finished_at IS NOT NULL AND finished_at <= (SELECT after_call FROM xq) FROM taskforge.tasks
            WHERE task_id = (SELECT task_id FROM q)), 'finished_at is set to the time of the call');
SELECT results_eq($$SELECT cancel_reason, cancel_requested_at = finished_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM q)$$,
                  $$VALUES ('no longer needed'::text, true)$$, 'the reason is stored with the request time');
SELECT is((SELECT attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM q)), 0, 'a cancelled QUEUED task has no attempt');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_waiting_q'])$$,
                'a cancelled task is never claimed');

SELECT results_eq('SELECT task_state FROM f', ARRAY['RETRYING'], 'setup: the second task is RETRYING');
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM r))$$,
                  $$VALUES ('CANCELLED'::text, true)$$, 'RETRYING -> CANCELLED');
SELECT results_eq($$SELECT state::text, finished_at IS NOT NULL, cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM r)$$,
                  $$VALUES ('CANCELLED'::text, true, NULL::text)$$, 'finished, with a NULL reason when none is given');
SELECT results_eq($$SELECT attempt_number::int, state::text FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM r)$$,
                  $$VALUES (1, 'FAILED'::text)$$, 'the earlier failed attempt is kept as it was');
-- Even when its backoff has ended, a cancelled task is not promoted.
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 hour' WHERE task_id = (SELECT task_id FROM r);
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote();
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM r)), 'CANCELLED', 'tf_promote leaves it CANCELLED');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_waiting_r'])$$,
                'the cancelled task is never claimed');
CREATE TEMP TABLE lng AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_waiting_long');
CREATE TEMP TABLE xl AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM lng), repeat('x', 5000));
SELECT is((SELECT length(cancel_reason) FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM lng)),
          1000, 'a long reason is capped at 1000 characters');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
