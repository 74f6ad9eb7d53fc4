-- tf_heartbeat records and returns the database time as last_heartbeat_at, and does not touch task leases.
BEGIN;
SELECT plan(9);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_heartbeat') AS id;
CREATE TEMP TABLE before AS SELECT * FROM taskforge.workers WHERE worker_id = (SELECT id FROM w);
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_heartbeat');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_heartbeat'], 60);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE hb1 AS SELECT taskforge.tf_heartbeat((SELECT id FROM w)) AS at;
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM hb1), 'the returned time is the database clock during the call');
SELECT ok((SELECT at > now() FROM hb1), 'it is the current clock, not the transaction start');
SELECT is((SELECT last_heartbeat_at FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)), (SELECT at FROM hb1),
    'last_heartbeat_at is the returned time');
CREATE TEMP TABLE hb2 AS SELECT taskforge.tf_heartbeat((SELECT id FROM w)) AS at;
SELECT ok((SELECT hb2.at > hb1.at FROM hb1, hb2), 'a later heartbeat returns a later time');
SELECT is((SELECT last_heartbeat_at FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)), (SELECT at FROM hb2),
    'last_heartbeat_at follows the latest heartbeat');
SELECT is((SELECT started_at FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)), (SELECT started_at FROM before),
    'started_at is unchanged');
SELECT is((SELECT lease_expires_at FROM taskforge.tasks JOIN s USING (task_id)), (SELECT lease_expires_at FROM c),
    'a heartbeat does not extend the task lease');
SELECT ok((SELECT stopped_at IS NULL FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)), 'the worker is not stopped');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
