-- tf_finalize_and_claim does both in one call: first one 'finalized' row per element in input order (refused elements included), then one 'claimed' row per task taken, in claim order.
BEGIN;
SELECT plan(12);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_both') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT l, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('l', l), 'q_fac_both', priority => 10))
  FROM unnest(ARRAY['run_a', 'run_b', 'run_c']) l;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_both'], 60, max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c), 3, 'setup: three tasks run');
INSERT INTO k SELECT 'next_p1', task_id FROM taskforge.tf_submit('echo', '{"l": "next_p1"}', 'q_fac_both', priority => 1);
INSERT INTO k SELECT 'next_p7', task_id FROM taskforge.tf_submit('noop', '{"l": "next_p7"}', 'q_fac_both', priority => 7, max_attempts => 5);
INSERT INTO k SELECT 'next_p0', task_id FROM taskforge.tf_submit('noop', '{"l": "next_p0"}', 'q_fac_both', priority => 0);
CREATE TEMP TABLE before_call AS SELECT clock_timestamp() AS at;

CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_finalize_and_claim((SELECT id FROM w),
        ARRAY[(SELECT task_id FROM k WHERE label = 'run_c'), (SELECT task_id FROM k WHERE label = 'run_a'), (SELECT task_id FROM k WHERE label = 'run_b')],
        ARRAY[1, 1, 2], ARRAY['succeeded', 'failed', 'succeeded'],
        ARRAY['{"r": "c"}'::jsonb, NULL, '{"r": "late"}'], NULL,
        queues => ARRAY['q_fac_both'], lease_seconds => 90, max_tasks => 2)
    WITH ORDINALITY x(kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload, queue, priority,
                         max_attempts, lease_expires_at, timeout_seconds, traceparent, pos);
CREATE TEMP TABLE after_call AS SELECT clock_timestamp() AS at;

SELECT results_eq(
    $$SELECT r.pos, r.kind, k.label, r.attempt_number, r.accepted, r.task_state, r.reason, r.task_type, r.payload, r.priority, r.max_attempts
        FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
    $$VALUES (1::bigint, 'finalized'::text, 'run_c'::text, 1, true, 'SUCCEEDED'::text, NULL::text, NULL::text, NULL::jsonb, NULL::int, NULL::int),
             (2, 'finalized', 'run_a', 1, true, 'FAILED', NULL, NULL, NULL, NULL, NULL),
             (3, 'finalized', 'run_b', 2, false, 'RUNNING', 'stale_attempt', NULL, NULL, NULL, NULL),
             (4, 'claimed', 'next_p7', 1, NULL, NULL, NULL, 'noop', '{"l": "next_p7"}', 7, 5),
             (5, 'claimed', 'next_p1', 1, NULL, NULL, NULL, 'echo', '{"l": "next_p1"}', 1, 3)$$,
    'finalized rows in input order (the refused one too), then claimed rows in claim order');
SELECT is((SELECT count(*)::int FROM r WHERE kind = 'finalized' AND (queue IS NOT NULL OR lease_expires_at IS NOT NULL)), 0,
    'finalized rows carry no queue or lease');
SELECT is((SELECT array_agg(DISTINCT queue::text) FROM r WHERE kind = 'claimed'), ARRAY['q_fac_both'], 'claimed rows carry their queue');
SELECT ok((SELECT bool_and(lease_expires_at BETWEEN (SELECT at FROM before_call) + interval '90 seconds' AND (SELECT at FROM after_call) + interval '90 seconds')
             FROM r WHERE kind = 'claimed'), 'claimed leases are the database clock + lease_seconds');
SELECT results_eq($$SELECT k.label, t.state::text FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.label$$,
                  $$VALUES ('next_p0', 'QUEUED'), ('next_p1', 'RUNNING'), ('next_p7', 'RUNNING'), ('run_a', 'FAILED'), ('run_b', 'RUNNING'), ('run_c', 'SUCCEEDED')$$,
                  'stored: two finished, the refused one still RUNNING, two newly RUNNING, one left QUEUED');
SELECT is((SELECT result FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'run_c'), '{"r": "c"}'::jsonb, 'the result is stored');
SELECT ok((SELECT result IS NULL FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'run_b'), 'the refused element''s result is not');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.attempts a USING (task_id)
            WHERE r.kind = 'claimed' AND a.attempt_number = 1 AND a.state = 'RUNNING' AND a.worker_id = (SELECT id FROM w)), 2,
    'each claimed task has its RUNNING attempt row');
SELECT ok((SELECT min(a.started_at) FROM r JOIN taskforge.attempts a USING (task_id) WHERE r.kind = 'claimed')
          >= (SELECT max(a.finished_at) FROM r JOIN taskforge.attempts a USING (task_id) WHERE r.kind = 'finalized' AND r.accepted),
    'the claim reads the clock after the finalize');

-- The next turn: finalize the two just claimed and claim the last.
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w),
        (SELECT array_agg(task_id ORDER BY pos) FROM r WHERE kind = 'claimed'), (SELECT array_agg(attempt_number ORDER BY pos) FROM r WHERE kind = 'claimed'),
        ARRAY['succeeded', 'succeeded'], queues => ARRAY['q_fac_both'], max_tasks => 5);
SELECT is((SELECT array_agg(kind || '/' || coalesce(task_state, 'claimed')) FROM r2), ARRAY['finalized/SUCCEEDED', 'finalized/SUCCEEDED', 'claimed/claimed'],
    'the next turn finalizes both and claims the last due task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
