-- _tf_claim_keyed (through tf_claim): a rate key's tasks start only with a token of its bucket: a full bucket of burst 3 gives exactly 3 starts at once, then per_second tokens per second of waiting (never more than burst); a rate key with no limit row is unlimited.
BEGIN;
SELECT plan(13);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_rate') AS id;
CREATE FUNCTION pg_temp.submit(p_queue text, p_rate_key text, p_n int) RETURNS void LANGUAGE sql AS $f$
    SELECT count(*) FROM generate_series(1, p_n) n,
           taskforge.tf_submit('noop', jsonb_build_object('n', n), p_queue, rate_key => p_rate_key);
$f$;
DO $$ BEGIN PERFORM pg_temp.submit('q_kr_rate', 'rk_claim', 10); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_claim', 4, 3); END $$;

SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate'], max_tasks => 10)), 3,
          'a full bucket of burst 3: a claim of ten starts exactly three');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate'], max_tasks => 10)), 0,
          'right after, the bucket is empty: nothing starts');
SELECT ok((SELECT tokens < 1 FROM taskforge.rate_limits WHERE rate_key = 'rk_claim'), 'fewer than one token left');

-- 0.3 s at 4 per second: at least 1.2 tokens. The claim starts exactly the whole tokens the bucket
-- holds at the claim's now (its attempts' started_at), counted from the bucket as it was before.
CREATE TEMP TABLE b0 AS SELECT tokens, refilled_at FROM taskforge.rate_limits WHERE rate_key = 'rk_claim';
DO $$ BEGIN PERFORM pg_sleep(0.3); END $$;
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate'], max_tasks => 10);
CREATE TEMP TABLE s3 AS
SELECT max(a.started_at) AS started_at FROM taskforge.attempts a JOIN c3 USING (task_id, attempt_number);
SELECT cmp_ok((SELECT count(*)::int FROM c3), '>=', 1, 'after 0.3 s at 4 per second at least one more task starts');
SELECT is((SELECT count(*)::int FROM c3),
          (SELECT floor(least(3, b0.tokens + 4 * extract(epoch FROM s3.started_at - b0.refilled_at)::float8))::int
             FROM b0, s3),
          'exactly floor(tokens + per_second * elapsed) tasks start');
SELECT is((SELECT refilled_at FROM taskforge.rate_limits WHERE rate_key = 'rk_claim'), (SELECT started_at FROM s3),
          'the bucket is refilled as of the claim''s now, the attempts'' started_at');

-- A bucket never holds more than burst: long enough for 5 tokens at 50 per second, burst 2 gives 2.
DO $$ BEGIN PERFORM pg_temp.submit('q_kr_rate_cap', 'rk_claim_cap', 10); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_claim_cap', 50, 2); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_cap'], max_tasks => 10)), 2,
          'burst 2: two start at once');
DO $$ BEGIN PERFORM pg_sleep(0.1); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_cap'], max_tasks => 10)), 2,
          'after 0.1 s at 50 per second the bucket is full again at 2, not 5');

-- One token per task, also one task per claim.
DO $$ BEGIN PERFORM pg_temp.submit('q_kr_rate_one', 'rk_claim_one', 5); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_claim_one', 0.001, 2); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_one'])), 1,
          '1st claim of one: a token');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_one'])), 1,
          '2nd claim of one: the second token');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_one'])), 0,
          '3rd claim of one: no token left');

-- A rate key without a limit row is not limited, and no row is made for it.
DO $$ BEGIN PERFORM pg_temp.submit('q_kr_rate_free', 'rk_claim_free', 12); END $$;
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_kr_rate_free'], max_tasks => 10)), 10,
          'a rate key with no limit: a claim of ten starts ten');
SELECT is_empty($$SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_claim_free'$$,
                'no bucket was made for it');
SELECT * FROM finish();
ROLLBACK;
