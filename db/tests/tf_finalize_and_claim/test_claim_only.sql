-- tf_finalize_and_claim with empty arrays only claims, exactly as tf_claim: up to max_tasks due QUEUED tasks in claim order, kind 'claimed' rows with the claim columns, RUNNING + lease + attempt row each; zero rows when nothing is eligible.
BEGIN;
SELECT plan(14);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_claim_only') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT 'p0', task_id FROM taskforge.tf_submit('echo', '{"l": "p0"}', 'q_fac_claim_only', priority => 0, max_attempts => 4);
INSERT INTO k SELECT 'p5', task_id FROM taskforge.tf_submit('noop', '{"l": "p5"}', 'q_fac_claim_only', priority => 5, max_attempts => 2);
INSERT INTO k SELECT 'p1', task_id FROM taskforge.tf_submit('noop', '{"l": "p1"}', 'q_fac_claim_only', priority => 1);
INSERT INTO k SELECT 'future', task_id FROM taskforge.tf_submit('noop', '{"l": "future"}', 'q_fac_claim_only', priority => 9,
                                                                 scheduled_at => clock_timestamp() + interval '1 hour');
CREATE TEMP TABLE before_call AS SELECT clock_timestamp() AS at;

CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}',
                                                 queues => ARRAY['q_fac_claim_only'], lease_seconds => 45, max_tasks => 2)
    WITH ORDINALITY x(kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload, queue, priority,
                         max_attempts, lease_expires_at, timeout_seconds, traceparent, pos);
CREATE TEMP TABLE after_call AS SELECT clock_timestamp() AS at;

SELECT results_eq($$SELECT r.kind, k.label, r.attempt_number, r.task_type, r.payload, r.queue, r.priority, r.max_attempts FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
                  $$VALUES ('claimed', 'p5', 1, 'noop', '{"l": "p5"}'::jsonb, 'q_fac_claim_only', 5, 2),
                           ('claimed', 'p1', 1, 'noop', '{"l": "p1"}'::jsonb, 'q_fac_claim_only', 1, 3)$$,
                  'two claimed rows, highest priority first; the future task is skipped');
SELECT is((SELECT count(*)::int FROM r WHERE accepted IS NULL AND task_state IS NULL AND reason IS NULL), 2,
    'the finalize columns of claimed rows are NULL');
SELECT ok((SELECT bool_and(lease_expires_at BETWEEN (SELECT at FROM before_call) + interval '45 seconds' AND (SELECT at FROM after_call) + interval '45 seconds') FROM r),
    'the lease is the database clock + lease_seconds');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.tasks t USING (task_id)
            WHERE t.state = 'RUNNING' AND t.owner_worker_id = (SELECT id FROM w) AND t.attempt_count = 1 AND t.lease_expires_at = r.lease_expires_at), 2,
    'each claimed task is RUNNING under the worker with attempt 1 and the returned lease');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.attempts a USING (task_id)
            WHERE a.attempt_number = 1 AND a.state = 'RUNNING' AND a.worker_id = (SELECT id FROM w) AND a.lease_expires_at = r.lease_expires_at), 2,
    'each got its RUNNING attempt row');

-- results and errors may be NULL or empty with empty task_ids; the rest of the queue.
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', '{}', '{}',
                                                                       queues => ARRAY['q_fac_claim_only'], max_tasks => 10);
SELECT is((SELECT array_agg(k.label) FROM r2 JOIN k USING (task_id)), ARRAY['p0'], 'max_tasks 10 takes the last due task only');
SELECT is((SELECT kind || '/' || task_type || '/' || max_attempts FROM r2), 'claimed/echo/4', 'with its own type and budget');
SELECT ok((SELECT lease_expires_at BETWEEN clock_timestamp() + interval '29 seconds' AND clock_timestamp() + interval '30 seconds' FROM r2),
    'lease_seconds defaults to 30');
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_claim_only'], max_tasks => 10)), 0,
    'zero rows when nothing is eligible');
SELECT is((SELECT state FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'future'), 'QUEUED', 'the future task stays QUEUED');

-- max_tasks defaults to 1; equal priorities go by created_at, task_id as in tf_claim.
CREATE TEMP TABLE more AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fac_claim_only_2')) AS task_id FROM generate_series(1, 3) g;
CREATE TEMP TABLE m1 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_claim_only_2']);
SELECT is((SELECT array_agg(task_id) FROM m1), ARRAY[(SELECT task_id FROM more WHERE n = 1)], 'max_tasks defaults to 1: the first submitted task');
SELECT is((SELECT array_agg(task_id) FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_claim_only_2'])),
    ARRAY[(SELECT task_id FROM more WHERE n = 2)], 'then the second');
SELECT is((SELECT count(*)::int FROM taskforge.tasks t JOIN more USING (task_id) WHERE t.state = 'QUEUED'), 1, 'one task of three left QUEUED');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
