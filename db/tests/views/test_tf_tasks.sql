-- tf_tasks shows each task once, with its current (latest) attempt, attempts left and the cancel flag.
BEGIN;
SELECT plan(11);
DO $$ BEGIN PERFORM taskforge.tf_register_task_type('test.view_tasks', backoff_base_seconds => 0, backoff_cap_seconds => 0, backoff_jitter => 0); END $$;
CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('view-tasks-w1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('view-tasks-w2') AS id;
CREATE TEMP TABLE sub AS SELECT * FROM taskforge.tf_submit('test.view_tasks', '{"x": 1}', queue => 'view_tasks', priority => 7,
                                                          max_attempts => 4, idempotency_key => 'view-tasks-key');

SELECT results_eq($$SELECT state, attempt_count, attempts_left, current_attempt_state, current_attempt_worker_id FROM taskforge.tf_tasks
                     WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('QUEUED'::text, 0, 4, NULL::text, NULL::uuid)$$, 'a new task: QUEUED, no attempt, 4 attempts left');
SELECT results_eq($$SELECT task_type, queue, priority, payload, idempotency_key FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('test.view_tasks'::text, 'view_tasks'::text, 7, '{"x": 1}'::jsonb, 'view-tasks-key'::text)$$,
                  'the submitted fields are shown');
SELECT is((SELECT fingerprint FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT encode(fingerprint, 'hex') FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          'the fingerprint is shown as hex');

-- Attempt 1 by w1 fails (retryable, zero backoff); attempt 2 by w2 runs.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['view_tasks']);
SELECT results_eq($$SELECT state, current_attempt_state, current_attempt_worker_id, owner_worker_id FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$SELECT 'RUNNING'::text, 'RUNNING'::text, id, id FROM w1$$, 'while running: current attempt RUNNING by its owner');
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w1), 1, 'retryable', error => '{"type": "t"}');
SELECT results_eq($$SELECT state, current_attempt_state, last_error ->> 'type' FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('RETRYING'::text, 'FAILED'::text, 't'::text)$$, 'while retrying: current attempt FAILED, last error shown');
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote();
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['view_tasks']);
SELECT results_eq('SELECT attempt_number FROM c2', ARRAY[2], 'setup: attempt 2 claimed');
SELECT results_eq($$SELECT attempt_count, attempts_left, current_attempt_state, current_attempt_worker_id, current_attempt_started_at
                     FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$SELECT 2, 2, 'RUNNING'::text, (SELECT id FROM w2), started_at FROM taskforge.attempts
                     WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2$$,
                  'the current attempt is attempt 2 (by w2), not attempt 1');
SELECT is((SELECT count(*)::int FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)), 1,
          'one row per task, whatever the number of attempts');
SELECT is((SELECT cancel_requested FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)), false, 'no cancel requested yet');
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub), 'enough');
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w2), 2, 'succeeded');
SELECT results_eq($$SELECT state, cancel_requested, cancel_reason, current_attempt_state, current_attempt_finished_at = finished_at
                     FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('SUCCEEDED'::text, true, 'enough'::text, 'SUCCEEDED'::text, true)$$,
                  'finished: cancel flag and reason shown, current attempt SUCCEEDED at the task finish time');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
