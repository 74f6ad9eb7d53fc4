-- tf_finalize uses the backoff policy of the task's type: a fixed 0.1 s type waits exactly 0.1 s on every retry, a zero-base type retries at once, and a policy change applies to later failures.
BEGIN;
SELECT plan(10);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('backoff.fixed', 0.1, 0.1, 0)$$, 'register a fixed 100 ms policy');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('backoff.zero', 0, 300, 0.2)$$, 'register a zero-delay policy');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_backoff_policy') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('backoff.fixed', '{}', 'q_backoff_policy', max_attempts => 5);

CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_backoff_policy']);
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'retryable');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM s) AND a.attempt_number = 1), interval '0.1 seconds',
    'after attempt 1 the task waits exactly 0.1 s');

UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM s WHERE t.task_id = s.task_id;
CREATE TEMP TABLE p1 AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_backoff_policy']);
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 2, 'retryable');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM s) AND a.attempt_number = 2), interval '0.1 seconds',
    'after attempt 2 the task waits exactly 0.1 s again (cap = base)');

-- The policy changes; the next failure uses the new one: min(5, 3 * 2^2) = 5 s.
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('backoff.fixed', 3, 5, 0)$$, 'change the policy to base 3 s, cap 5 s');
UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM s WHERE t.task_id = s.task_id;
CREATE TEMP TABLE p2 AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_backoff_policy']);
SELECT is((SELECT attempt_number FROM c3), 3, 'the task runs as attempt 3');
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 3, 'retryable');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM s) AND a.attempt_number = 3), interval '5 seconds',
    'after attempt 3 under the new policy the task waits min(5, 3 * 4) = 5 s');

CREATE TEMP TABLE z AS SELECT * FROM taskforge.tf_submit('backoff.zero', '{}', 'q_backoff_policy_zero');
CREATE TEMP TABLE zc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_backoff_policy_zero']);
CREATE TEMP TABLE zf AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM z), (SELECT id FROM w), 1, 'retryable');
SELECT is((SELECT task_state FROM zf), 'RETRYING', 'a zero-base type still goes through RETRYING');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM z)), interval '0',
    'with base 0 the retry is due at the finish time');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
