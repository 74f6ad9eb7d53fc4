-- tf_cancel then lease expiry: tf_recover ends a cancel-requested task CANCELLED instead of requeueing it.
BEGIN;
SELECT plan(6);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cancel-recovery-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_recovery', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_recovery']);
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub), 'shutdown');
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE a.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();

SELECT results_eq('SELECT task_state, cancel_requested FROM x', $$VALUES ('RUNNING'::text, true)$$, 'setup: cancel requested while running');
SELECT cmp_ok((SELECT failed FROM r), '>=', 1, 'the recovery counts it among the ended tasks');
SELECT results_eq($$SELECT state::text, finished_at IS NOT NULL, cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('CANCELLED'::text, true, 'shutdown'::text)$$, 'the task ends CANCELLED with its reason, not QUEUED');
SELECT results_eq($$SELECT state::text, outcome::text FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('ABANDONED'::text, 'lease_expired'::text)$$, 'its attempt is ABANDONED');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_recovery'])$$, 'it is never claimed again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
