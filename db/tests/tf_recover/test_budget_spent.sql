-- tf_recover: when the expired attempt was the last one allowed, the task ends FAILED with last_error type lease_expired and is never claimed again.
BEGIN;
SELECT plan(15);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-budget-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_budget', max_attempts => 2);

-- Attempt 1 expires: budget remains, so the task is requeued.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_budget']);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '5 seconds' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE a.task_id = t.task_id AND a.state = 'RUNNING' AND t.task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_recover();

SELECT results_eq('SELECT attempt_number FROM c1', ARRAY[1], 'setup: attempt 1 claimed');
SELECT results_eq('SELECT recovered, failed FROM r1', $$VALUES (1, 0)$$, 'attempt 1 of 2 expired: requeued');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED', 'task QUEUED after the first expiry');

-- Attempt 2 (the last allowed) expires too.
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_budget']);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '5 seconds' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE a.task_id = t.task_id AND a.state = 'RUNNING' AND t.task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_recover();

SELECT results_eq('SELECT attempt_number FROM c2', ARRAY[2], 'setup: attempt 2 claimed');
SELECT results_eq('SELECT recovered, failed, next_lease_expiry FROM r2', $$VALUES (0, 1, NULL::timestamptz)$$,
                  'the last attempt expired: counted as failed, not recovered');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'FAILED',
          'the task is FAILED once its budget is spent');
SELECT is((SELECT last_error ->> 'type' FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'lease_expired',
          'last_error type is lease_expired');
SELECT ok((SELECT last_error ->> 'message' LIKE '%attempt 2%' FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          'last_error message names the lost attempt');
SELECT is((SELECT finished_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT finished_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2),
          'the task finished when its last attempt was abandoned');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM taskforge.tasks
            WHERE task_id = (SELECT task_id FROM sub)), 'owner and lease are cleared');
SELECT results_eq($$SELECT attempt_number::int, state::text, outcome::text FROM taskforge.attempts
                     WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$VALUES (1, 'ABANDONED'::text, 'lease_expired'::text), (2, 'ABANDONED', 'lease_expired')$$,
                  'both attempts are ABANDONED');
SELECT is((SELECT attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 2,
          'attempt_count equals the budget');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_budget'])$$,
                'a FAILED task is never claimed again');
SELECT results_eq('SELECT recovered, failed FROM taskforge.tf_recover()', $$VALUES (0, 0)$$,
                  'a second recovery finds nothing left to do');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
