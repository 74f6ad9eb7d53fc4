-- tf_recover: an expired RUNNING task with budget left has its attempt ABANDONED (lease_expired, recovery lag visible) and is QUEUED again at once, without backoff.
BEGIN;
SELECT plan(17);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-requeue-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_requeue', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_requeue']);
-- Simulate a dead owner: the lease ran out 10 seconds ago (task and attempt keep the same deadline, as tf_renew does).
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '10 seconds'
 WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE a.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE res AS SELECT * FROM taskforge.tf_recover();

SELECT is((SELECT count(*)::int FROM c), 1, 'setup: the task was claimed');
SELECT results_eq('SELECT recovered, failed, next_lease_expiry FROM res',
                  $$VALUES (1, 0, NULL::timestamptz)$$,
                  'one task recovered, none failed, no lease left running');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED',
          'the task is QUEUED again');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM taskforge.tasks
            WHERE task_id = (SELECT task_id FROM sub)), 'owner and lease are cleared');
SELECT is((SELECT scheduled_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT finished_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
          'requeued due at the recovery instant (no backoff)');
SELECT ok((SELECT scheduled_at <= clock_timestamp() FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          'the task is due now');
SELECT ok((SELECT finished_at IS NULL FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
          'a requeued task has no finished_at');
SELECT is((SELECT attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 1,
          'recovery creates no attempt');
SELECT is((SELECT last_error FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), NULL::jsonb,
          'a requeued task carries no terminal error');
SELECT results_eq($$SELECT attempt_number::int, state::text, outcome::text FROM taskforge.attempts
                     WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$VALUES (1, 'ABANDONED'::text, 'lease_expired'::text)$$,
                  'attempt 1 is ABANDONED with outcome lease_expired');
SELECT ok((SELECT finished_at >= lease_expires_at FROM taskforge.attempts
            WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
          'the attempt was abandoned after its lease expired');
SELECT is((SELECT error ->> 'type' FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)),
          'lease_expired', 'the attempt error says lease_expired');
SELECT is((SELECT abandoned_at FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT finished_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)),
          'tf_attempts.abandoned_at is the recovery time');
SELECT cmp_ok((SELECT recovery_lag_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub)),
              '>=', 10::double precision, 'recovery lag counts from the lease deadline (expired 10 s before)');
SELECT is((SELECT recovery_lag_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT extract(epoch FROM finished_at - lease_expires_at)::double precision
             FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)),
          'recovery_lag_seconds = abandoned_at - lease_expires_at');
SELECT is((SELECT worker_id FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)),
          (SELECT id FROM w), 'the abandoned attempt still names its worker');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
