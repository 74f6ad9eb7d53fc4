-- tf_finalize_and_claim finalizes with tf_finalize's outcome rules: succeeded stores the result; failed is terminal; retryable is RETRYING with the type's backoff or FAILED on the last attempt; cancelled; with a cancel request every outcome but succeeded ends CANCELLED.
BEGIN;
SELECT plan(7);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fac.fixed', 5, 300, 0)$$, 'register a type with base 5 s, no jitter');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_outcomes') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, outcome text, task_id bigint);
INSERT INTO k SELECT l, o, (SELECT task_id FROM taskforge.tf_submit('fac.fixed', jsonb_build_object('l', l), 'q_fac_outcomes',
                                                                     max_attempts => CASE WHEN l = 'retry_last' THEN 1 ELSE 3 END))
  FROM (VALUES ('ok', 'succeeded'), ('fail', 'failed'), ('retry', 'retryable'), ('retry_last', 'retryable'), ('cancel', 'cancelled'),
               ('req_ok', 'succeeded'), ('req_fail', 'failed'), ('req_retry', 'retryable')) v(l, o);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_outcomes'], 60, max_tasks => 10);
CREATE TEMP TABLE x AS SELECT z.* FROM k, taskforge.tf_cancel(k.task_id, 'stop') z WHERE k.label LIKE 'req_%';

CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w),
    (SELECT array_agg(task_id ORDER BY label) FROM k), (SELECT array_agg(1) FROM k), (SELECT array_agg(outcome::text ORDER BY label) FROM k),
    (SELECT array_agg(jsonb_build_object('r', label) ORDER BY label) FROM k), (SELECT array_agg(jsonb_build_object('message', label) ORDER BY label) FROM k),
    queues => ARRAY['q_fac_outcomes'], max_tasks => 10);

SELECT results_eq($$SELECT k.label, r.kind, r.accepted, r.task_state, t.state::text, a.state::text FROM r JOIN k USING (task_id)
                      JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id) ORDER BY k.label$$,
                  $$VALUES ('cancel', 'finalized', true, 'CANCELLED', 'CANCELLED', 'CANCELLED'),
                           ('fail', 'finalized', true, 'FAILED', 'FAILED', 'FAILED'),
                           ('ok', 'finalized', true, 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'),
                           ('req_fail', 'finalized', true, 'CANCELLED', 'CANCELLED', 'FAILED'),
                           ('req_ok', 'finalized', true, 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'),
                           ('req_retry', 'finalized', true, 'CANCELLED', 'CANCELLED', 'FAILED'),
                           ('retry', 'finalized', true, 'RETRYING', 'RETRYING', 'FAILED'),
                           ('retry_last', 'finalized', true, 'FAILED', 'FAILED', 'FAILED')$$,
                  'the returned and stored states follow tf_finalize''s rules, cancel requests included');
SELECT is((SELECT count(*)::int FROM r WHERE kind = 'claimed'), 0, 'nothing to claim: the RETRYING task is not claimed back');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id) WHERE k.label = 'retry'),
    interval '5 seconds', 'the retry waits the type''s backoff (5 s after attempt 1)');
SELECT results_eq($$SELECT k.label, t.result FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.result IS NOT NULL ORDER BY k.label$$,
                  $$VALUES ('ok', '{"r": "ok"}'::jsonb), ('req_ok', '{"r": "req_ok"}'::jsonb)$$, 'only the succeeded tasks store their results');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.last_error = jsonb_build_object('message', k.label)), 6,
    'the six failures store their own errors');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
