-- _tf_claim_keyed (through tf_claim): claims rotate across concurrency keys: key A with 1000 tasks submitted first and key B with 10 after, claimed one task at a time, alternate A, B, A, B, ... so all of B's tasks start within the first 20 claims; with a third key the rotation takes each key in turn, the one served longest ago first.
BEGIN;
SELECT plan(6);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_fairness') AS id;
CREATE FUNCTION pg_temp.submit(p_queue text, p_key text, p_n int) RETURNS void LANGUAGE sql AS $f$
    SELECT count(*) FROM generate_series(1, p_n) n,
           taskforge.tf_submit('noop', jsonb_build_object('n', n), p_queue, concurrency_key => p_key);
$f$;
CREATE TEMP TABLE seq (queue text, claim int, concurrency_key text);
-- p_n claims of one task each in p_queue, recording the key of each task started.
CREATE FUNCTION pg_temp.claim_one_by_one(p_queue text, p_n int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    FOR i IN 1..p_n LOOP
        INSERT INTO seq
        SELECT p_queue, i, t.concurrency_key
          FROM taskforge.tf_claim((SELECT id FROM w), ARRAY[p_queue]) c JOIN taskforge.tasks t USING (task_id);
    END LOOP;
END;
$f$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kf', 'ck_fair_a', 1000); END $$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kf', 'ck_fair_b', 10); END $$;
DO $$ BEGIN PERFORM pg_temp.claim_one_by_one('q_kf', 24); END $$;

SELECT is((SELECT count(*)::int FROM seq WHERE queue = 'q_kf'), 24, 'every claim of one started a task');
SELECT is((SELECT string_agg(right(concurrency_key, 1), '' ORDER BY claim) FROM seq WHERE queue = 'q_kf' AND claim <= 20),
          'abababababababababab', 'the first 20 claims alternate A, B (A first: submitted first)');
SELECT is((SELECT max(claim) FROM seq WHERE queue = 'q_kf' AND concurrency_key = 'ck_fair_b'), 20,
          'all ten tasks of B started within the first 20 claims, despite A''s 1000-task backlog');
SELECT is((SELECT string_agg(right(concurrency_key, 1), '' ORDER BY claim) FROM seq WHERE queue = 'q_kf' AND claim > 20),
          'aaaa', 'with B done, A takes every claim');

-- Three keys, the third submitted last and a key served more recently waiting longer.
DO $$ BEGIN PERFORM pg_temp.submit('q_kf3', 'ck_fair3_x', 50); END $$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kf3', 'ck_fair3_y', 50); END $$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kf3', 'ck_fair3_z', 3); END $$;
DO $$ BEGIN PERFORM pg_temp.claim_one_by_one('q_kf3', 12); END $$;
SELECT is((SELECT string_agg(right(concurrency_key, 1), '' ORDER BY claim) FROM seq WHERE queue = 'q_kf3'),
          'xyzxyzxyzxyx', 'three keys: x, y, z in turn, then x and y alternate once z is done');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
