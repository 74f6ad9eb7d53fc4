-- Attempt deadlines (task type timeout_seconds): the claim caps the lease at the deadline; renewals never extend past it and say timed_out once it has passed; a late finalize is refused timed_out; tasks of types without a timeout have no deadline.
BEGIN;
SELECT plan(14);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('deadline.short', timeout_seconds => 0.3)$$, 'register a type with a 0.3 s timeout');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_deadline') AS id;
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('deadline.short', '{}', 'q_deadline');
CREATE TEMP TABLE free AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_deadline_free');
SELECT is((SELECT timeout_seconds FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM t)), 0.3::float8,
          'the task keeps its type''s timeout');

CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deadline'], lease_seconds => 30);
SELECT is((SELECT timeout_seconds FROM c), 0.3::float8, 'the claim returns timeout_seconds');
SELECT is((SELECT deadline_at - (SELECT started_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM t)) FROM taskforge.tasks
            WHERE task_id = (SELECT task_id FROM t)), interval '0.3 seconds', 'deadline_at = attempt start + timeout');
SELECT is((SELECT lease_expires_at FROM c), (SELECT deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)),
          'a 30 s lease is capped at the deadline');
SELECT is((SELECT deadline_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM t)),
          (SELECT deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)), 'the attempt records its deadline');

CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM t), (SELECT id FROM w), 1, 30);
SELECT results_eq($$SELECT renewed, lease_expires_at = (SELECT deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)), reason FROM r1$$,
                  $$VALUES (true, true, NULL::text)$$, 'a renewal before the deadline extends the lease only up to it');
SELECT pg_sleep(0.35);
SELECT results_eq($$SELECT renewed, lease_expires_at, reason FROM taskforge.tf_renew((SELECT task_id FROM t), (SELECT id FROM w), 1, 30)$$,
                  $$VALUES (false, NULL::timestamptz, 'timed_out'::text)$$, 'after the deadline tf_renew refuses with reason timed_out');
SELECT results_eq($$SELECT renewed, reason FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT task_id FROM t)], ARRAY[1], 30)$$,
                  $$VALUES (false, 'timed_out'::text)$$, 'tf_renew_many says timed_out too');
SELECT results_eq($$SELECT accepted, task_state, reason FROM taskforge.tf_finalize((SELECT task_id FROM t), (SELECT id FROM w), 1, 'succeeded')$$,
                  $$VALUES (false, 'RUNNING'::text, 'timed_out'::text)$$, 'a finalize after the deadline is refused timed_out');
SELECT is((SELECT lease_expires_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)),
          (SELECT deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t)), 'the lease was never moved past the deadline');

CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deadline_free'], lease_seconds => 30);
SELECT results_eq($$SELECT c2.timeout_seconds, t.deadline_at FROM c2 JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES (NULL::float8, NULL::timestamptz)$$, 'a type without a timeout: no deadline');
SELECT cmp_ok((SELECT lease_expires_at FROM c2), '>', clock_timestamp() + interval '29 seconds', 'and the full lease');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
