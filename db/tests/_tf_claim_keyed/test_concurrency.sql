-- _tf_claim_keyed (through tf_claim): a concurrency key with max_running 2 never has more than 2 RUNNING, across claims and queues; a finish frees exactly one slot; a raised limit admits more, a lowered one stops nothing but admits none until under it; a key without a limit is unlimited.
BEGIN;
SELECT plan(16);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_concurrency') AS id;
CREATE FUNCTION pg_temp.submit(p_queue text, p_key text, p_n int) RETURNS void LANGUAGE sql AS $f$
    SELECT count(*) FROM generate_series(1, p_n) n,
           taskforge.tf_submit('noop', jsonb_build_object('n', n), p_queue, concurrency_key => p_key);
$f$;
-- Finish the oldest RUNNING task of a key (its current attempt, as its worker).
CREATE FUNCTION pg_temp.finish_one(p_key text) RETURNS boolean LANGUAGE sql AS $f$
    SELECT f.accepted
      FROM (SELECT task_id, attempt_count, owner_worker_id FROM taskforge.tasks
             WHERE concurrency_key = p_key AND state = 'RUNNING' ORDER BY task_id LIMIT 1) t,
           taskforge.tf_finalize(t.task_id, t.owner_worker_id, t.attempt_count, 'succeeded') f;
$f$;
CREATE FUNCTION pg_temp.running(p_key text) RETURNS int LANGUAGE sql AS $f$
    SELECT count(*)::int FROM taskforge.tasks WHERE concurrency_key = p_key AND state = 'RUNNING';
$f$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kc', 'ck_claim', 8); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_concurrency_limit('ck_claim', 2); END $$;

SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 2,
          'limit 2: a claim of ten starts two');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 0,
          'at the limit nothing starts');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'])), 0,
          'nor with a claim of one');
SELECT results_eq($$SELECT running, queued FROM taskforge.tf_concurrency_keys WHERE concurrency_key = 'ck_claim'$$,
                  $$VALUES (2::bigint, 6::bigint)$$, 'tf_concurrency_keys: 2 RUNNING, 6 QUEUED');
SELECT ok(pg_temp.finish_one('ck_claim'), 'finish one of the two');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 1,
          'one finish frees exactly one slot');
SELECT is(pg_temp.running('ck_claim'), 2, 'two RUNNING again');

SELECT is(taskforge.tf_set_concurrency_limit('ck_claim', 3), 2, 'raise the limit to 3');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 1,
          'the raised limit admits one more');

SELECT is(taskforge.tf_set_concurrency_limit('ck_claim', 1), 3, 'lower the limit to 1 with 3 RUNNING');
SELECT is(pg_temp.running('ck_claim'), 3, 'lowering stops nothing');
DO $$ BEGIN PERFORM pg_temp.finish_one('ck_claim'); PERFORM pg_temp.finish_one('ck_claim'); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 0,
          'at 1 RUNNING (the new limit) nothing starts');
DO $$ BEGIN PERFORM pg_temp.finish_one('ck_claim'); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc'], max_tasks => 10)), 1,
          'under the limit again: one starts');

-- The limit is the key's, whatever the queue.
DO $$ BEGIN PERFORM pg_temp.submit('q_kc_a', 'ck_claim_two_queues', 2); END $$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kc_b', 'ck_claim_two_queues', 2); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_concurrency_limit('ck_claim_two_queues', 1); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc_a'], max_tasks => 10))
          + (SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc_b'], max_tasks => 10)), 1,
          'limit 1 over two queues: one claim in each queue starts one task in all');

-- No limit: the key only rotates.
DO $$ BEGIN PERFORM pg_temp.submit('q_kc_free', 'ck_claim_free', 12); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kc_free'], max_tasks => 10)), 10,
          'a key without a limit: a claim of ten starts ten');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
