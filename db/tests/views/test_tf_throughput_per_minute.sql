-- tf_throughput_per_minute has one row per UTC minute and queue over the current minute and the 59 before it: finished, succeeded and failed attempts, and the p50/p95 queue wait of first attempts only.
BEGIN;
SELECT plan(9);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-tpm-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'view_tpm', max_attempts => 2)) AS task_id
  FROM generate_series(1, 7) s(n);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_tpm'], max_tasks => 7);

SELECT is_empty($$SELECT * FROM taskforge.tf_throughput_per_minute WHERE queue = 'view_tpm'$$, 'no rows while no attempt has finished');

-- n = 1..4 and 6, 7 succeed; n = 5 fails, is redriven, and its second attempt succeeds.
CREATE TEMP TABLE f AS
SELECT s.n, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, CASE WHEN s.n = 5 THEN 'failed' ELSE 'succeeded' END) k;
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_retry((SELECT task_id FROM sub WHERE n = 5));
INSERT INTO f SELECT 5, k.* FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_tpm']) c2
 CROSS JOIN LATERAL taskforge.tf_finalize(c2.task_id, (SELECT id FROM w), c2.attempt_number, 'succeeded') k;
SELECT is((SELECT count(*)::int FROM f WHERE accepted), 8, 'setup: eight attempts finalized');

-- Place everything in time, relative to the start of the current minute m0 (UTC):
--   n = 1..5, attempt 1: created m0 - 10 min, started n seconds later (queue wait n s), finished in minute m0 - 10 min;
--   n = 5, attempt 2: started and finished in minute m0 - 2 min (not a first attempt: no queue wait);
--   n = 6, 7: created m0 - 61 min; n = 6 finished at m0 - 60 min + 30 s (before the window);
--   n = 7 started at m0 - 60 min (queue wait 60 s) and finished at m0 - 59 min exactly (the window's first minute).
CREATE TEMP TABLE m AS SELECT date_trunc('minute', now(), 'UTC') AS m0;
UPDATE taskforge.tasks x SET created_at = (SELECT m0 FROM m) - interval '61 minutes'
  FROM sub s WHERE x.task_id = s.task_id AND s.n IN (6, 7);
UPDATE taskforge.tasks x SET created_at = (SELECT m0 FROM m) - interval '10 minutes'
  FROM sub s WHERE x.task_id = s.task_id AND s.n <= 5;
UPDATE taskforge.attempts x
   SET started_at = CASE WHEN s.n <= 5 THEN (SELECT m0 FROM m) - interval '10 minutes' + make_interval(secs => s.n)
                         WHEN s.n = 6 THEN (SELECT m0 FROM m) - interval '61 minutes'
                         ELSE (SELECT m0 FROM m) - interval '60 minutes' END,
       finished_at = CASE WHEN s.n <= 5 THEN (SELECT m0 FROM m) - interval '10 minutes' + interval '30 seconds'
                          WHEN s.n = 6 THEN (SELECT m0 FROM m) - interval '60 minutes' + interval '30 seconds'
                          ELSE (SELECT m0 FROM m) - interval '59 minutes' END
  FROM sub s WHERE x.task_id = s.task_id AND x.attempt_number = 1;
UPDATE taskforge.attempts x
   SET started_at = (SELECT m0 FROM m) - interval '2 minutes',
       finished_at = (SELECT m0 FROM m) - interval '2 minutes' + interval '1 second'
  FROM sub s WHERE x.task_id = s.task_id AND s.n = 5 AND x.attempt_number = 2;

SELECT results_eq($$SELECT minute, attempts_finished, attempts_succeeded, attempts_failed, first_attempts
                      FROM taskforge.tf_throughput_per_minute WHERE queue = 'view_tpm' ORDER BY minute$$,
                  $$SELECT m0 - interval '59 minutes', 1::bigint, 1::bigint, 0::bigint, 1::bigint FROM m
                    UNION ALL SELECT m0 - interval '10 minutes', 5, 4, 1, 5 FROM m
                    UNION ALL SELECT m0 - interval '2 minutes', 1, 1, 0, 0 FROM m$$,
                  'one row per minute with finished attempts: counts of finished, succeeded, failed and first attempts; the minute before the window is left out');
SELECT is((SELECT wait_p50_seconds FROM taskforge.tf_throughput_per_minute, m WHERE queue = 'view_tpm' AND minute = m0 - interval '10 minutes'),
          3::double precision, 'wait_p50_seconds is the median queue wait of the first attempts (1..5 s)');
SELECT ok((SELECT abs(wait_p95_seconds - 4.8) < 1e-9 FROM taskforge.tf_throughput_per_minute, m WHERE queue = 'view_tpm' AND minute = m0 - interval '10 minutes'),
          'wait_p95_seconds interpolates between the two slowest waits (4.8 s)');
SELECT ok((SELECT wait_p50_seconds IS NULL AND wait_p95_seconds IS NULL FROM taskforge.tf_throughput_per_minute, m
            WHERE queue = 'view_tpm' AND minute = m0 - interval '2 minutes'),
          'a minute with only a second attempt has no queue wait (first attempts only)');
SELECT is((SELECT wait_p50_seconds FROM taskforge.tf_throughput_per_minute, m WHERE queue = 'view_tpm' AND minute = m0 - interval '59 minutes'),
          60::double precision, 'queue wait is first attempt start - task creation, in seconds');

SET LOCAL TimeZone = 'Asia/Kathmandu';
SELECT results_eq($$SELECT minute FROM taskforge.tf_throughput_per_minute WHERE queue = 'view_tpm' ORDER BY minute$$,
                  $$SELECT m0 + d FROM m, unnest(ARRAY[interval '-59 minutes', interval '-10 minutes', interval '-2 minutes']) d$$,
                  'the same minutes under a +05:45 session time zone');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
