-- tf_finalize_many 'retryable': with budget left the attempt is FAILED and the task RETRYING at finish time + the backoff of its own task type's policy for that attempt number; on the last allowed attempt the task is FAILED. Several types and attempt numbers in one batch.
BEGIN;
SELECT plan(16);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fmany.fixed', 7, 300, 0)$$, 'register a type with base 7 s, no jitter');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fmany.other', 3, 300, 0)$$, 'register a type with base 3 s, no jitter');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fmany.capped', 100, 150, 0)$$, 'register a type with base 100 s, cap 150 s');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_retryable') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
-- Second attempts: b (fixed) and f (capped) fail once through tf_finalize first.
INSERT INTO k SELECT 'b', task_id FROM taskforge.tf_submit('fmany.fixed', '{}', 'q_fmany_retry_b', max_attempts => 3);
INSERT INTO k SELECT 'f', task_id FROM taskforge.tf_submit('fmany.capped', '{}', 'q_fmany_retry_b', max_attempts => 3);
CREATE TEMP TABLE cb AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_retry_b'], max_tasks => 2);
CREATE TEMP TABLE fb AS SELECT r.* FROM cb, taskforge.tf_finalize(cb.task_id, (SELECT id FROM w), 1, 'retryable') r;
UPDATE taskforge.tasks t SET scheduled_at = '2000-01-01 00:00:00+00' FROM k WHERE t.task_id = k.task_id;
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE cb2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_retry_b'], max_tasks => 2);
SELECT is((SELECT array_agg(DISTINCT attempt_number) FROM cb2), ARRAY[2], 'setup: b and f run their second attempt');
-- First attempts.
INSERT INTO k SELECT 'a', task_id FROM taskforge.tf_submit('fmany.fixed', '{}', 'q_fmany_retry', max_attempts => 3);
INSERT INTO k SELECT 'c', task_id FROM taskforge.tf_submit('fmany.other', '{}', 'q_fmany_retry', max_attempts => 3);
INSERT INTO k SELECT 'd', task_id FROM taskforge.tf_submit('fmany.fixed', '{}', 'q_fmany_retry', max_attempts => 1);
INSERT INTO k SELECT 'e', task_id FROM taskforge.tf_submit('retryable_fail', '{}', 'q_fmany_retry', max_attempts => 3);
CREATE TEMP TABLE ca AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_retry'], max_tasks => 10);

CREATE TEMP TABLE b (pos int, label text, attempt_number int);
INSERT INTO b VALUES (1, 'd', 1), (2, 'b', 2), (3, 'a', 1), (4, 'e', 1), (5, 'c', 1), (6, 'f', 2);
CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many((SELECT id FROM w),
    (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (label)),
    (SELECT array_agg(b.attempt_number ORDER BY b.pos) FROM b),
    ARRAY['retryable', 'retryable', 'retryable', 'retryable', 'retryable', 'retryable'],
    (SELECT array_agg('{"ignored": true}'::jsonb) FROM b),
    (SELECT array_agg(jsonb_build_object('type', 'Timeout', 'message', b.label) ORDER BY b.pos) FROM b))
    WITH ORDINALITY r(task_id, attempt_number, accepted, task_state, reason, pos);
CREATE TEMP TABLE after AS
SELECT k.label, t.state::text AS state, t.scheduled_at - a.finished_at AS delay, t.finished_at AS task_finished, t.result, t.last_error,
       a.state::text AS attempt_state, a.outcome::text AS outcome, a.error
  FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a ON a.task_id = t.task_id AND a.attempt_number = t.attempt_count;

SELECT results_eq($$SELECT k.label, f.accepted, f.task_state FROM f JOIN k USING (task_id) ORDER BY f.pos$$,
                  $$VALUES ('d', true, 'FAILED'), ('b', true, 'RETRYING'), ('a', true, 'RETRYING'), ('e', true, 'RETRYING'),
                           ('c', true, 'RETRYING'), ('f', true, 'RETRYING')$$,
                  'retryable with budget left is RETRYING; on the last allowed attempt (d: max_attempts 1) it is FAILED');
SELECT results_eq($$SELECT label, state, attempt_state, outcome FROM after ORDER BY label$$,
                  $$VALUES ('a', 'RETRYING', 'FAILED', 'retryable'), ('b', 'RETRYING', 'FAILED', 'retryable'),
                           ('c', 'RETRYING', 'FAILED', 'retryable'), ('d', 'FAILED', 'FAILED', 'retryable'),
                           ('e', 'RETRYING', 'FAILED', 'retryable'), ('f', 'RETRYING', 'FAILED', 'retryable')$$,
                  'stored: every attempt FAILED with outcome retryable, the tasks as returned');
SELECT is((SELECT delay FROM after WHERE label = 'a'), interval '7 seconds', 'a (fixed, attempt 1): finish time + 7 s');
SELECT is((SELECT delay FROM after WHERE label = 'b'), interval '14 seconds', 'b (fixed, attempt 2): finish time + 14 s');
SELECT is((SELECT delay FROM after WHERE label = 'c'), interval '3 seconds', 'c (another type, attempt 1): its own policy, + 3 s');
SELECT is((SELECT delay FROM after WHERE label = 'f'), interval '150 seconds', 'f (base 100, cap 150, attempt 2): capped at 150 s');
SELECT ok((SELECT delay BETWEEN interval '1.6 seconds' AND interval '2.4 seconds' FROM after WHERE label = 'e'),
    'e (built-in retryable_fail): 2 s +/- 20 %');
SELECT is((SELECT count(*)::int FROM after WHERE state = 'RETRYING' AND task_finished IS NULL), 5, 'RETRYING tasks are not finished');
SELECT ok((SELECT task_finished IS NOT NULL FROM after WHERE label = 'd'), 'the FAILED task is finished');
SELECT is((SELECT count(*)::int FROM after WHERE result IS NULL), 6, 'no result is stored for a retryable failure');
SELECT is((SELECT count(*)::int FROM after WHERE error = jsonb_build_object('type', 'Timeout', 'message', label) AND last_error = error), 6,
    'each task and attempt stores the error of its own element');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
