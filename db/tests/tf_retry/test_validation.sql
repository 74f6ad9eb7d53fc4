-- tf_retry: unknown task TF404; NULL task_id and extra_attempts outside 1..1000 TF400; a budget above 10000 is TF400 and leaves the task FAILED.
BEGIN;
SELECT plan(12);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-validation-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'retry_validation', max_attempts => 1);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_validation']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 1, 'failed');
CREATE TEMP TABLE missing AS SELECT coalesce(max(task_id), 0) + 1000000 AS id FROM taskforge.tasks;

SELECT results_eq('SELECT task_state FROM f', ARRAY['FAILED'], 'setup: a FAILED task');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s)', (SELECT id FROM missing)), 'TF404',
                 format('task_id: no task %s', (SELECT id FROM missing)), 'an unknown task id is TF404');
SELECT throws_ok('SELECT * FROM taskforge.tf_retry(NULL)', 'TF400', 'task_id: must not be NULL', 'a NULL task id is TF400');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s, extra_attempts => 0)', (SELECT task_id FROM sub)), 'TF400',
                 'extra_attempts: must be between 1 and 1000, got 0', 'extra_attempts 0 is TF400');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s, extra_attempts => 1001)', (SELECT task_id FROM sub)), 'TF400',
                 'extra_attempts: must be between 1 and 1000, got 1001', 'extra_attempts 1001 is TF400');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s, extra_attempts => NULL)', (SELECT task_id FROM sub)), 'TF400',
                 'extra_attempts: must be between 1 and 1000, got NULL', 'NULL extra_attempts is TF400');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'FAILED', 'the rejected calls left the task FAILED');

-- A long history: 9500 failed attempts within a budget of 9500 (crafted directly, consistent with every invariant).
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, outcome, started_at, lease_expires_at, finished_at)
SELECT (SELECT task_id FROM sub), n, (SELECT id FROM w), 'FAILED', 'failed', clock_timestamp(), clock_timestamp(), clock_timestamp()
  FROM generate_series(2, 9500) n;
UPDATE taskforge.tasks SET max_attempts = 9500, attempt_count = 9500 WHERE task_id = (SELECT task_id FROM sub);
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s, extra_attempts => 501)', (SELECT task_id FROM sub)), 'TF400',
                 'extra_attempts: would raise max_attempts to 10001; the limit is 10000', 'a budget above 10000 is TF400');
SELECT results_eq($$SELECT state::text, max_attempts::int FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('FAILED'::text, 9500)$$, 'the rejected call left the task FAILED with its budget');
SELECT results_eq(format('SELECT task_state, max_attempts FROM taskforge.tf_retry(%s, extra_attempts => 500)', (SELECT task_id FROM sub)),
                  $$VALUES ('QUEUED'::text, 10000)$$, 'a budget of exactly 10000 is accepted');
SELECT results_eq($$SELECT attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_validation'])$$,
                  ARRAY[9501], 'the next claim is attempt 9501');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
