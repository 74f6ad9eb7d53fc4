-- tf_recover: an expired task whose cancel was requested ends CANCELLED (never QUEUED, never FAILED), whatever budget it has left.
BEGIN;
SELECT plan(11);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-cancel-w1') AS id;
CREATE TEMP TABLE a AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_cancel', max_attempts => 3);
CREATE TEMP TABLE b AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'recover_cancel', max_attempts => 1);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_cancel'], max_tasks => 2);
CREATE TEMP TABLE cx AS
SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM a), 'operator stop')
UNION ALL
SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM b), NULL);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '3 seconds'
 WHERE task_id IN ((SELECT task_id FROM a), (SELECT task_id FROM b));
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id IN ((SELECT task_id FROM a), (SELECT task_id FROM b));
CREATE TEMP TABLE res AS SELECT * FROM taskforge.tf_recover();

SELECT is((SELECT count(*)::int FROM c), 2, 'setup: both tasks claimed');
SELECT results_eq('SELECT task_state, cancel_requested FROM cx', $$VALUES ('RUNNING'::text, true), ('RUNNING', true)$$,
                  'setup: cancel requested while running');
SELECT results_eq('SELECT recovered, failed, next_lease_expiry FROM res', $$VALUES (0, 2, NULL::timestamptz)$$,
                  'both tasks ended (counted as failed), none requeued');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM a)), 'CANCELLED',
          'budget left + cancel requested: CANCELLED, not QUEUED');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM b)), 'CANCELLED',
          'budget spent + cancel requested: CANCELLED, not FAILED');
SELECT ok((SELECT bool_and(finished_at IS NOT NULL AND owner_worker_id IS NULL AND lease_expires_at IS NULL)
             FROM taskforge.tasks WHERE task_id IN ((SELECT task_id FROM a), (SELECT task_id FROM b))),
          'both are finished with owner and lease cleared');
SELECT is((SELECT last_error FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM a)), NULL::jsonb,
          'a cancelled task gets no lease_expired error');
SELECT is((SELECT cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM a)), 'operator stop',
          'the cancel reason is kept');
SELECT results_eq($$SELECT state::text, outcome::text FROM taskforge.attempts
                     WHERE task_id IN ((SELECT task_id FROM a), (SELECT task_id FROM b)) ORDER BY task_id$$,
                  $$VALUES ('ABANDONED'::text, 'lease_expired'::text), ('ABANDONED', 'lease_expired')$$,
                  'the attempts are ABANDONED (the lease ran out)');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_cancel'], max_tasks => 5)$$,
                'cancelled tasks are never claimed again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
