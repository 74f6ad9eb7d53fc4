-- tf_recover records an attempt whose lease ran to its deadline as timed_out (retried under the budget, FAILED with last_error type timed_out when it is spent); a worker that stops renewing before its deadline is still lease_expired.
BEGIN;
SELECT plan(8);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('deadline.recover', timeout_seconds => 0.2)$$, 'register a type with a 0.2 s timeout');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_deadline_recover') AS id;
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('deadline.recover', '{}', 'q_deadline_recover', max_attempts => 2);
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deadline_recover'], lease_seconds => 30);
SELECT pg_sleep(0.25);
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq($$SELECT state::text, outcome::text, error->>'type' FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM t)$$,
                  $$VALUES ('ABANDONED'::text, 'timed_out'::text, 'timed_out'::text)$$, 'attempt 1 is ABANDONED with outcome timed_out');
SELECT results_eq($$SELECT state::text, deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)$$,
                  $$VALUES ('QUEUED'::text, NULL::timestamptz)$$, 'the task is QUEUED again (budget left) and its deadline cleared');

CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deadline_recover'], lease_seconds => 30);
SELECT is((SELECT attempt_number::int FROM c2), 2, 'attempt 2 gets a fresh deadline');
SELECT pg_sleep(0.25);
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq($$SELECT state::text, last_error->>'type' FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)$$,
                  $$VALUES ('FAILED'::text, 'timed_out'::text)$$, 'the budget spent: FAILED with last_error type timed_out');

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('deadline.long', timeout_seconds => 60)$$, 'a type with a 60 s timeout');
CREATE TEMP TABLE t2 AS SELECT task_id FROM taskforge.tf_submit('deadline.long', '{}', 'q_deadline_recover');
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deadline_recover'], lease_seconds => 0.1);
SELECT pg_sleep(0.15);
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_recover();
SELECT is((SELECT outcome::text FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM t2)), 'lease_expired',
          'a lease that ended before the deadline is lease_expired, not timed_out');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
