-- tf_scheduler_heartbeat records a scheduler process start on its first call, moves last_heartbeat_at to the database time on each later call, and takes the latest details.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE ids AS SELECT gen_random_uuid() AS id;
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE hb1 AS
SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM ids), 'sched-hb', hostname => 'host-a', pid => 4242,
                                        heartbeat_seconds => 2) AS at;
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM hb1), 'the returned time is the database clock during the call');
SELECT ok((SELECT at > now() FROM hb1), 'it is the current clock, not the transaction start');
SELECT results_eq($$SELECT name, hostname, pid, heartbeat_seconds, started_at, last_heartbeat_at, stopped_at
                      FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)$$,
                  $$SELECT 'sched-hb'::text, 'host-a'::text, 4242, 2::double precision, at, at, NULL::timestamptz FROM hb1$$,
                  'the first beat records the process start: started_at = last_heartbeat_at = the returned time, not stopped');

CREATE TEMP TABLE hb2 AS
SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM ids), 'sched-hb-renamed', hostname => 'host-b', pid => 4343,
                                        heartbeat_seconds => 3) AS at;
SELECT ok((SELECT hb2.at > hb1.at FROM hb1, hb2), 'a later beat returns a later time');
SELECT is((SELECT last_heartbeat_at FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)), (SELECT at FROM hb2),
          'last_heartbeat_at follows the latest beat');
SELECT is((SELECT started_at FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)), (SELECT at FROM hb1),
          'started_at stays the time of the first beat');
SELECT results_eq($$SELECT name, hostname, pid, heartbeat_seconds FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)$$,
                  $$VALUES ('sched-hb-renamed'::text, 'host-b'::text, 4343, 3::double precision)$$,
                  'name, hostname, pid and heartbeat_seconds are those of the latest beat');
SELECT is((SELECT count(*)::int FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)), 1,
          'one row per scheduler_id (an upsert)');

-- A second process start (another id) is a row of its own.
SELECT lives_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-hb')$$, 'another scheduler beats with its own id');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
