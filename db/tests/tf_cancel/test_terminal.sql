-- tf_cancel on a SUCCEEDED, FAILED or CANCELLED task returns its state unchanged and writes nothing.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cancel-terminal-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT o.outcome, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('o', o.outcome),
                                                             queue => 'cancel_terminal')) AS task_id
  FROM (VALUES ('succeeded'), ('failed')) o(outcome);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_terminal'], max_tasks => 2);
CREATE TEMP TABLE f AS
SELECT s.outcome, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, s.outcome) k;
CREATE TEMP TABLE gone AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_terminal_c');
CREATE TEMP TABLE x0 AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM gone), 'first');
CREATE TEMP TABLE before AS SELECT * FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM sub UNION ALL SELECT task_id FROM gone);

SELECT results_eq('SELECT outcome, task_state FROM f ORDER BY outcome', $$VALUES ('failed'::text, 'FAILED'::text), ('succeeded', 'SUCCEEDED')$$,
                  'setup: one SUCCEEDED and one FAILED task');
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM sub WHERE outcome = 'succeeded'), 'late')$$,
                  $$VALUES ('SUCCEEDED'::text, false)$$, 'SUCCEEDED is returned unchanged, no cancel recorded');
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM sub WHERE outcome = 'failed'), 'late')$$,
                  $$VALUES ('FAILED'::text, false)$$, 'FAILED is returned unchanged, no cancel recorded');
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM gone), 'second')$$,
                  $$VALUES ('CANCELLED'::text, true)$$, 'CANCELLED is returned unchanged');
SELECT results_eq($$SELECT task_id, state::text, cancel_requested_at, cancel_reason, finished_at, updated_at FROM taskforge.tasks
                     WHERE task_id IN (SELECT task_id FROM sub UNION ALL SELECT task_id FROM gone) ORDER BY task_id$$,
                  'SELECT task_id, state::text, cancel_requested_at, cancel_reason, finished_at, updated_at FROM before ORDER BY task_id',
                  'no terminal row was written (state, request, reason, finished_at, updated_at)');
SELECT is((SELECT cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM gone)), 'first',
          'the first reason of a cancelled task is kept');
SELECT results_eq($$SELECT state::text FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM sub) ORDER BY task_id$$,
                  $$VALUES ('SUCCEEDED'::text), ('FAILED')$$, 'the attempts are unchanged');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
