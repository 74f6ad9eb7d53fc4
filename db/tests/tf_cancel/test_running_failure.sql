-- tf_cancel on a RUNNING task: a later failed, retryable or cancelled outcome ends the task CANCELLED, never RETRYING or FAILED, even with budget left.
BEGIN;
SELECT plan(9);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cancel-runfail-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT o.outcome, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('o', o.outcome),
                                                             queue => 'cancel_runfail', max_attempts => 5)) AS task_id
  FROM (VALUES ('failed'), ('retryable'), ('cancelled')) o(outcome);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_runfail'], max_tasks => 3);
CREATE TEMP TABLE x AS SELECT s.outcome, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_cancel(s.task_id, 'stop') k;
CREATE TEMP TABLE f AS
SELECT s.outcome, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, s.outcome, error => '{"type": "boom"}') k;

SELECT is((SELECT count(*)::int FROM c), 3, 'setup: three tasks claimed');
SELECT is((SELECT count(*)::int FROM x WHERE task_state = 'RUNNING' AND cancel_requested), 3, 'setup: three cancel requests on RUNNING tasks');
SELECT results_eq('SELECT outcome, accepted, task_state FROM f ORDER BY outcome',
                  $$VALUES ('cancelled'::text, true, 'CANCELLED'::text), ('failed', true, 'CANCELLED'), ('retryable', true, 'CANCELLED')$$,
                  'every non-success outcome is accepted and ends CANCELLED');
SELECT results_eq($$SELECT s.outcome, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.outcome$$,
                  $$VALUES ('cancelled'::text, 'CANCELLED'::text), ('failed', 'CANCELLED'), ('retryable', 'CANCELLED')$$,
                  'the stored task states are CANCELLED');
SELECT results_eq($$SELECT s.outcome, a.state::text, a.outcome::text FROM sub s JOIN taskforge.attempts a USING (task_id) ORDER BY s.outcome$$,
                  $$VALUES ('cancelled'::text, 'CANCELLED'::text, 'cancelled'::text), ('failed', 'FAILED', 'failed'), ('retryable', 'FAILED', 'retryable')$$,
                  'the attempts record what the worker reported');
SELECT ok((SELECT bool_and(t.finished_at IS NOT NULL AND t.owner_worker_id IS NULL AND t.lease_expires_at IS NULL)
             FROM sub JOIN taskforge.tasks t USING (task_id)), 'all are finished with owner and lease cleared');
SELECT is((SELECT t.last_error ->> 'type' FROM sub s JOIN taskforge.tasks t USING (task_id) WHERE s.outcome = 'retryable'),
          'boom', 'the error is kept on the cancelled task');
-- Nothing comes back: no promotion, no claim.
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote();
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_runfail'], max_tasks => 3)$$,
                'none of them runs again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
