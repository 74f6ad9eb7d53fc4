-- tf_attempts lists every attempt with its worker name, duration in seconds and, for ABANDONED attempts only, abandoned_at and recovery_lag_seconds.
BEGIN;
SELECT plan(10);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-attempts-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'view_attempts', max_attempts => 3);
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_attempts']);
SELECT results_eq($$SELECT attempt_number, state, duration_seconds, abandoned_at, recovery_lag_seconds FROM taskforge.tf_attempts
                     WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES (1, 'RUNNING'::text, NULL::double precision, NULL::timestamptz, NULL::double precision)$$,
                  'a running attempt has no duration and no recovery lag');
-- Simulate time: attempt 1 started 100 s ago and its lease ran out 40 s ago.
UPDATE taskforge.attempts SET started_at = clock_timestamp() - interval '100 seconds', lease_expires_at = clock_timestamp() - interval '40 seconds'
 WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '40 seconds' WHERE task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_attempts']);
-- Attempt 2 started 7 s ago and succeeds now.
UPDATE taskforge.attempts SET started_at = clock_timestamp() - interval '7 seconds' WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2;
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 2, 'succeeded', '{"r": 2}');

SELECT results_eq($$SELECT attempt_number, state, outcome, worker_name, task_type, queue FROM taskforge.tf_attempts
                     WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$VALUES (1, 'ABANDONED'::text, 'lease_expired'::text, 'view-attempts-w1'::text, 'noop'::text, 'view_attempts'::text),
                           (2, 'SUCCEEDED', 'succeeded', 'view-attempts-w1', 'noop', 'view_attempts')$$,
                  'both attempts listed with worker name, type and queue');
SELECT is((SELECT duration_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2),
          (SELECT extract(epoch FROM finished_at - started_at)::double precision FROM taskforge.attempts
            WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2),
          'duration_seconds = finished_at - started_at in seconds');
SELECT cmp_ok((SELECT duration_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2),
              '>=', 7::double precision, 'the successful attempt ran at least 7 s');
SELECT cmp_ok((SELECT duration_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2),
              '<', 3600::double precision, 'duration is in seconds, not milliseconds');
SELECT cmp_ok((SELECT duration_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
              '>=', 100::double precision, 'the abandoned attempt lasted from its start until recovery');
SELECT cmp_ok((SELECT recovery_lag_seconds FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
              '>=', 40::double precision, 'recovery lag of the abandoned attempt is measured from its lease deadline');
SELECT results_eq($$SELECT abandoned_at IS NULL, recovery_lag_seconds IS NULL, result FROM taskforge.tf_attempts
                     WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 2$$,
                  $$VALUES (true, true, '{"r": 2}'::jsonb)$$, 'a successful attempt has no abandoned_at or lag, and shows its result');
SELECT is((SELECT abandoned_at FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
          (SELECT finished_at FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
          'abandoned_at is the finish time of the abandoned attempt');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
