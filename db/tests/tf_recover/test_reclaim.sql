-- tf_recover then tf_claim: the replacement is attempt 2 of the same task, the old owner is fenced off, and the history reads ABANDONED then the new attempt.
BEGIN;
SELECT plan(13);
CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('recover-reclaim-w1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('recover-reclaim-w2') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_reclaim', max_attempts => 3);
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['recover_reclaim']);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '2 seconds' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_recover();
CREATE TEMP TABLE abandoned AS SELECT * FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1;
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['recover_reclaim']);

SELECT results_eq('SELECT task_id, attempt_number FROM c1', 'SELECT task_id, 1 FROM sub', 'setup: w1 claimed attempt 1');
SELECT results_eq('SELECT task_id, attempt_number FROM c2', 'SELECT task_id, 2 FROM sub',
                  'the recovered task is claimable at once and the claim creates attempt 2 of the same task');
SELECT is((SELECT owner_worker_id FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), (SELECT id FROM w2),
          'the new owner is w2');
SELECT results_eq($$SELECT attempt_number, state, worker_id FROM taskforge.tf_attempts
                     WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$SELECT 1, 'ABANDONED'::text, (SELECT id FROM w1) UNION ALL SELECT 2, 'RUNNING', (SELECT id FROM w2)$$,
                  'history: attempt 1 ABANDONED by w1, attempt 2 RUNNING by w2');

-- The old owner wakes up: its fencing token (w1, attempt 1) is stale.
SELECT results_eq($$SELECT renewed, lease_expires_at FROM taskforge.tf_renew((SELECT task_id FROM sub), (SELECT id FROM w1), 1)$$,
                  $$VALUES (false, NULL::timestamptz)$$, 'the old owner cannot renew');
SELECT results_eq($$SELECT accepted, task_state, reason FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w1), 1, 'succeeded')$$,
                  $$VALUES (false, 'RUNNING'::text, 'stale_attempt'::text)$$, 'the old owner cannot finalize (stale_attempt)');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'RUNNING',
          'the refused finalize changed nothing');

SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w2), 2, 'succeeded', '{"ok": 1}')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'the replacement finalizes');
SELECT results_eq($$SELECT attempt_number, state FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$VALUES (1, 'ABANDONED'::text), (2, 'SUCCEEDED')$$, 'final history: ABANDONED then SUCCEEDED');
SELECT results_eq('SELECT state, outcome, finished_at, lease_expires_at, error FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1',
                  'SELECT state, outcome, finished_at, lease_expires_at, error FROM abandoned',
                  'the abandoned attempt was never rewritten');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'SUCCEEDED', 'the task SUCCEEDED');
SELECT is((SELECT count(*)::int FROM taskforge.tasks JOIN sub USING (task_id)), 1, 'the task id never changed (one task row)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
