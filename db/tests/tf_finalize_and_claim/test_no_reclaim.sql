-- A task that tf_finalize_and_claim finalizes as RETRYING is not claimed back by the same call, even with a zero backoff and the highest priority: RETRYING waits for tf_promote. Its next claim is a new attempt.
BEGIN;
SELECT plan(10);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fac.nodelay', 0, 0, 0)$$, 'register a task type without backoff');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_no_reclaim') AS id;
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_submit('fac.nodelay', '{"l": "retry me"}', 'q_fac_no_reclaim', priority => 100, max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_no_reclaim'], 60);
SELECT is((SELECT task_id FROM c), (SELECT task_id FROM r), 'setup: the task runs');
CREATE TEMP TABLE other AS SELECT * FROM taskforge.tf_submit('noop', '{"l": "other"}', 'q_fac_no_reclaim', priority => 0);

CREATE TEMP TABLE f AS
SELECT x.* FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM r)], ARRAY[1], ARRAY['retryable'],
                                                 queues => ARRAY['q_fac_no_reclaim'], max_tasks => 10)
    WITH ORDINALITY x(kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload, queue, priority,
                         max_attempts, lease_expires_at, timeout_seconds, traceparent, pos);
SELECT is((SELECT kind || '/' || task_state FROM f WHERE pos = 1), 'finalized/RETRYING', 'the task is finalized RETRYING');
SELECT ok((SELECT t.scheduled_at <= clock_timestamp() FROM taskforge.tasks t JOIN r USING (task_id)), 'its backoff (zero) is already over');
SELECT is((SELECT array_agg(task_id) FROM f WHERE kind = 'claimed'), ARRAY[(SELECT task_id FROM other)],
    'the same call claims only the other task, not the one it just put in RETRYING');
SELECT is((SELECT t.state || '/' || t.attempt_count FROM taskforge.tasks t JOIN r USING (task_id)), 'RETRYING/1', 'the task stays RETRYING after attempt 1');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN r USING (task_id)), 1, 'it has one attempt');

-- Not by the next call either, until promoted.
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_no_reclaim'], max_tasks => 10)), 0,
    'a RETRYING task is not claimed before tf_promote');
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote(100000);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_no_reclaim'], max_tasks => 10);
SELECT is((SELECT task_id::text || '/' || attempt_number FROM c2), (SELECT task_id::text || '/2' FROM r), 'after promotion it is claimed as attempt 2');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
