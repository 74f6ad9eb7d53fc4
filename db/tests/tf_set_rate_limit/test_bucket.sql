-- tf_set_rate_limit: a new bucket starts full; replacing a limit keeps the tokens the bucket holds now (at most the new burst), it does not refill it; a limit removed and set again starts full.
BEGIN;
SELECT plan(10);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_rate_bucket') AS id;
CREATE TEMP TABLE t AS
SELECT (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', n), 'q_rl_bucket', rate_key => 'rk_bucket'))
       AS task_id
  FROM generate_series(1, 5) n;

-- 0.001 tokens per second: the refill during this test (well under a second) stays below 0.01.
SELECT lives_ok($$SELECT taskforge.tf_set_rate_limit('rk_bucket', 0.001, 3)$$, 'a new limit of burst 3');
SELECT results_eq($$SELECT tokens, refilled_at <= clock_timestamp() FROM taskforge.rate_limits WHERE rate_key = 'rk_bucket'$$,
                  $$VALUES (3::double precision, true)$$, 'the new bucket holds burst tokens, refilled as of the call');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rl_bucket'], max_tasks => 10)), 3,
          'a claim drains it: three of the five tasks start');
SELECT ok((SELECT tokens_now < 0.01 AND queued = 2 FROM taskforge.tf_rate_limits WHERE rate_key = 'rk_bucket'),
          'tf_rate_limits: the bucket is empty, two tasks wait');

SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_bucket', 0.001, 10)$$,
                  $$VALUES (0.001::double precision, 3)$$, 'raising the burst to 10 returns the old limit');
SELECT ok((SELECT tokens < 0.01 AND burst = 10 FROM taskforge.rate_limits WHERE rate_key = 'rk_bucket'),
          'the raised bucket keeps its (empty) tokens: no refill to the new burst');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rl_bucket'], max_tasks => 10)), 0,
          'so nothing more starts');

-- Lowering the burst below the tokens held caps them.
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_bucket_full', 5, 5); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_bucket_full', 5, 2); END $$;
SELECT is((SELECT tokens FROM taskforge.rate_limits WHERE rate_key = 'rk_bucket_full'), 2::double precision,
          'a full bucket of 5 lowered to burst 2 holds 2 tokens');

-- Removed and set again: a new, full bucket.
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_bucket', NULL); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_bucket', 0.001, 4); END $$;
SELECT is((SELECT tokens FROM taskforge.rate_limits WHERE rate_key = 'rk_bucket'), 4::double precision,
          'a limit removed and set again starts full');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rl_bucket'], max_tasks => 10)), 2,
          'and the two waiting tasks start');
SELECT * FROM finish();
ROLLBACK;
