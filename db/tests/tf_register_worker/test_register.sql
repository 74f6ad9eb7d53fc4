-- tf_register_worker returns a fresh uuid per call (names may repeat) and records the process with started_at = last_heartbeat_at = database time.
BEGIN;
SELECT plan(15);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_register_same', 'host-a', 4242, ARRAY['q1', 'q2'], ARRAY['noop'], 2.5) AS id;
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_register_same') AS id;
CREATE TEMP TABLE r1 AS SELECT w.* FROM taskforge.workers w JOIN w1 ON w.worker_id = w1.id;
CREATE TEMP TABLE r2 AS SELECT w.* FROM taskforge.workers w JOIN w2 ON w.worker_id = w2.id;

SELECT ok((SELECT id FROM w1) IS NOT NULL, 'a worker id is returned');
SELECT isnt((SELECT id FROM w1), (SELECT id FROM w2), 'the same name registered twice gets two different ids');
SELECT is((SELECT count(*)::int FROM taskforge.workers WHERE name = 'w_register_same'), 2, 'both registrations are recorded');
SELECT is((SELECT hostname FROM r1), 'host-a', 'hostname is recorded');
SELECT is((SELECT pid FROM r1), 4242, 'pid is recorded');
SELECT is((SELECT queues FROM r1), ARRAY['q1', 'q2'], 'queues are recorded');
SELECT is((SELECT task_types FROM r1), ARRAY['noop'], 'task types are recorded');
SELECT is((SELECT heartbeat_seconds FROM r1), 2.5::float8, 'the heartbeat interval is recorded');
SELECT ok((SELECT started_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM r1), 'started_at is the database time of the call');
SELECT is((SELECT last_heartbeat_at FROM r1), (SELECT started_at FROM r1), 'registration counts as the first heartbeat');
SELECT ok((SELECT stopped_at IS NULL FROM r1), 'a new worker is not stopped');
SELECT ok((SELECT hostname IS NULL AND pid IS NULL AND queues IS NULL AND task_types IS NULL FROM r2), 'optional details default to NULL');
SELECT is((SELECT heartbeat_seconds FROM r2), 5::float8, 'the heartbeat interval defaults to 5 s');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_register_worker_nothing'])), 0,
    'a freshly registered worker may claim at once');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
