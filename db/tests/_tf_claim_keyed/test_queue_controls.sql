-- _tf_claim_keyed (through tf_claim): keyed tasks of a paused queue are not claimed by any claim form (and spend no token, stamp no key); in a limited queue the queue limit holds for keyed and plain tasks together, whatever the keys allow.
BEGIN;
SELECT plan(16);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('keyedq.paused')$$, 'a task type used only here (paused)');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('keyedq.limited')$$, 'a task type used only here (limited)');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_queue_controls') AS id;
CREATE FUNCTION pg_temp.claimed(p_queues text[], p_type text, p_max int DEFAULT 10) RETURNS int LANGUAGE sql AS $f$
    SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), p_queues, max_tasks => p_max, task_types => ARRAY[p_type]);
$f$;

-- A paused queue: one task of each kind of key, and a plain one.
CREATE TEMP TABLE p AS
SELECT task_id FROM taskforge.tf_submit('keyedq.paused', '{}', 'q_kq_paused', rate_key => 'rk_kq_paused')
UNION ALL SELECT task_id FROM taskforge.tf_submit('keyedq.paused', '{"n": 1}', 'q_kq_paused', rate_key => 'rk_kq_free')
UNION ALL SELECT task_id FROM taskforge.tf_submit('keyedq.paused', '{"n": 2}', 'q_kq_paused', concurrency_key => 'ck_kq_paused')
UNION ALL SELECT task_id FROM taskforge.tf_submit('keyedq.paused', '{"n": 3}', 'q_kq_paused', ordering_key => 'ok_kq_paused')
UNION ALL SELECT task_id FROM taskforge.tf_submit('keyedq.paused', '{"n": 4}', 'q_kq_paused');
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_kq_paused', 0.001, 1); END $$;
DO $$ BEGIN PERFORM taskforge.tf_pause_queue('q_kq_paused'); END $$;
SELECT is(pg_temp.claimed(ARRAY['q_kq_paused'], 'keyedq.paused'), 0, 'paused: a claim of the queue takes nothing');
SELECT is(pg_temp.claimed(NULL, 'keyedq.paused'), 0, 'paused: a claim of any queue takes nothing of it');
SELECT is(pg_temp.claimed(ARRAY['q_kq_paused', 'q_kq_elsewhere'], 'keyedq.paused'), 0, 'paused: nor a claim of two queues');
SELECT is(pg_temp.claimed(ARRAY['q_kq_paused'], 'keyedq.paused', 1), 0, 'paused: nor a claim of one task');
SELECT ok((SELECT tokens = 1 FROM taskforge.rate_limits WHERE rate_key = 'rk_kq_paused'), 'no token was spent');
SELECT ok((SELECT last_claimed_at IS NULL FROM taskforge.concurrency_keys WHERE concurrency_key = 'ck_kq_paused'),
          'no rotation stamp was set');
DO $$ BEGIN PERFORM taskforge.tf_resume_queue('q_kq_paused'); END $$;
SELECT is(pg_temp.claimed(ARRAY['q_kq_paused'], 'keyedq.paused'), 5, 'resumed: all five start');

-- A limited queue (2): three tasks of an unlimited concurrency key, two of a rate key without a limit,
-- two plain ones.
CREATE TEMP TABLE l AS
SELECT (SELECT task_id FROM taskforge.tf_submit('keyedq.limited', jsonb_build_object('n', n), 'q_kq_limited',
                                                rate_key => CASE WHEN n IN (4, 5) THEN 'rk_kq_limited' END,
                                                concurrency_key => CASE WHEN n <= 3 THEN 'ck_kq_limited' END))
           AS task_id
  FROM generate_series(1, 7) n;
DO $$ BEGIN PERFORM taskforge.tf_set_queue_limit('q_kq_limited', 2); END $$;
SELECT is(pg_temp.claimed(ARRAY['q_kq_limited'], 'keyedq.limited'), 2, 'limited to 2: a claim of ten starts two');
SELECT is(pg_temp.claimed(ARRAY['q_kq_limited'], 'keyedq.limited'), 0, 'at the queue limit nothing starts');
SELECT is(pg_temp.claimed(NULL, 'keyedq.limited'), 0, 'nor through a claim of any queue');
SELECT is(pg_temp.claimed(ARRAY['q_kq_limited', 'q_kq_elsewhere'], 'keyedq.limited'), 0, 'nor through a claim of two queues');
DO $$ BEGIN
    PERFORM taskforge.tf_finalize(t.task_id, t.owner_worker_id, t.attempt_count, 'succeeded')
       FROM taskforge.tasks t WHERE t.queue = 'q_kq_limited' AND t.state = 'RUNNING' ORDER BY t.task_id LIMIT 1;
END $$;
SELECT is(pg_temp.claimed(NULL, 'keyedq.limited'), 1, 'a finish frees one place');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_kq_limited' AND state = 'RUNNING'), 2,
          'two RUNNING in the limited queue');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
