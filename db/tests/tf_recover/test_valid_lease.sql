-- tf_recover: a task whose lease is still valid is never touched; next_lease_expiry reports the earliest running deadline.
BEGIN;
SELECT plan(12);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-valid-w1') AS id;
CREATE TEMP TABLE live AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_valid', priority => 10);
CREATE TEMP TABLE dead AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_valid', priority => 0);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_valid'], lease_seconds => 120, max_tasks => 2);
-- Only "dead" loses its lease.
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM dead);
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM dead);
CREATE TEMP TABLE before AS SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM live);
CREATE TEMP TABLE before_attempt AS SELECT * FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM live);
CREATE TEMP TABLE res AS SELECT * FROM taskforge.tf_recover();

SELECT is((SELECT count(*)::int FROM c), 2, 'setup: both tasks claimed');
SELECT results_eq('SELECT recovered, failed FROM res', $$VALUES (1, 0)$$, 'only the expired task is recovered');
SELECT is((SELECT next_lease_expiry FROM res), (SELECT lease_expires_at FROM before),
          'next_lease_expiry is the deadline of the task still running');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM dead)), 'QUEUED', 'the expired task is QUEUED');
SELECT results_eq('SELECT state, owner_worker_id, lease_expires_at, attempt_count, updated_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM live)',
                  'SELECT state, owner_worker_id, lease_expires_at, attempt_count, updated_at FROM before',
                  'the task with a valid lease is unchanged (state, owner, lease, attempts, updated_at)');
SELECT results_eq('SELECT state, finished_at, lease_expires_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM live)',
                  'SELECT state, finished_at, lease_expires_at FROM before_attempt',
                  'its attempt is still RUNNING and unfinished');

-- With only valid leases left, a call changes nothing at all.
CREATE TEMP TABLE res2 AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq('SELECT recovered, failed FROM res2', $$VALUES (0, 0)$$, 'nothing to recover while leases are valid');
SELECT is((SELECT next_lease_expiry FROM res2), (SELECT lease_expires_at FROM before),
          'next_lease_expiry still reports the running deadline');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM live)), 'RUNNING', 'the task is still RUNNING');

-- The owner is still in control: renew and finalize work after the recovery calls.
SELECT results_eq($$SELECT renewed FROM taskforge.tf_renew((SELECT task_id FROM live), (SELECT id FROM w), 1, 60)$$,
                  ARRAY[true], 'the owner can still renew');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM live), (SELECT id FROM w), 1, 'succeeded')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'the owner can still finalize');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
