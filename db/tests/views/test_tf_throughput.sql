-- tf_throughput has rows per window (60/300/900 s) and queue once attempts have finished, with success, failure and latency figures.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-throughput-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'view_throughput', max_attempts => 1)) AS task_id
  FROM generate_series(1, 3) s(n);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_throughput'], max_tasks => 3);

SELECT is_empty($$SELECT * FROM taskforge.tf_throughput WHERE queue = 'view_throughput'$$, 'no rows while no attempt has finished');
-- Attempts ran 2 s (n = 1, 2) and 4 s (n = 3); n = 3 fails.
UPDATE taskforge.attempts x SET started_at = clock_timestamp() - make_interval(secs => CASE WHEN s.n = 3 THEN 4 ELSE 2 END)
  FROM sub s WHERE x.task_id = s.task_id;
CREATE TEMP TABLE f AS
SELECT s.n, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, CASE WHEN s.n = 3 THEN 'failed' ELSE 'succeeded' END) k;

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 3, 'setup: three attempts finalized');
SELECT results_eq($$SELECT window_seconds, attempts_finished, attempts_succeeded, attempts_failed FROM taskforge.tf_throughput
                     WHERE queue = 'view_throughput' ORDER BY window_seconds$$,
                  $$VALUES (60, 3::bigint, 2::bigint, 1::bigint), (300, 3, 2, 1), (900, 3, 2, 1)$$,
                  'one row per window with finished, succeeded and failed counts');
SELECT is((SELECT succeeded_per_second FROM taskforge.tf_throughput WHERE queue = 'view_throughput' AND window_seconds = 60),
          2 / 60.0::double precision, 'succeeded_per_second = successes / window');
SELECT is((SELECT succeeded_per_second FROM taskforge.tf_throughput WHERE queue = 'view_throughput' AND window_seconds = 300),
          2 / 300.0::double precision, 'the 300 s window divides by 300');
SELECT ok((SELECT run_p50_seconds >= 2 AND run_p50_seconds < 60 FROM taskforge.tf_throughput WHERE queue = 'view_throughput' AND window_seconds = 60),
          'run_p50_seconds is the median run time in seconds (the 2 s attempts)');
-- p95 of {2, 2, 4} (+ the same small delay each) interpolates 90 % of the way from 2 to 4: p95 - p50 = 1.8 s.
SELECT ok((SELECT run_p95_seconds - run_p50_seconds BETWEEN 1.7 AND 1.9 AND wait_p50_seconds IS NOT NULL
             FROM taskforge.tf_throughput WHERE queue = 'view_throughput' AND window_seconds = 60),
          'run_p95_seconds reflects the slow attempt; queue wait is reported');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
