-- tf_schedulers computes liveness from database time: alive, stale after more than 3 * heartbeat_seconds without a beat, stopped after a stopping beat.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE s AS
SELECT v.name, gen_random_uuid() AS id FROM (VALUES ('fresh'), ('quiet'), ('silent'), ('gone')) v(name);
CREATE TEMP TABLE beats AS
SELECT taskforge.tf_scheduler_heartbeat(id, 'view-schedulers-' || name, hostname => 'host-a', pid => 4242, heartbeat_seconds => 100) AS at FROM s;
-- Simulate time (beat every 100 s, stale after 300 s): "quiet" beat 250 s ago, "silent" and "gone" 350 s ago.
UPDATE taskforge.schedulers x
   SET started_at = started_at - make_interval(secs => d.back), last_heartbeat_at = last_heartbeat_at - make_interval(secs => d.back)
  FROM (VALUES ('quiet', 250), ('silent', 350), ('gone', 350)) d(name, back) JOIN s USING (name)
 WHERE x.scheduler_id = s.id;
CREATE TEMP TABLE stop AS SELECT taskforge.tf_scheduler_heartbeat(id, 'view-schedulers-gone', stopping => true) AS at FROM s WHERE name = 'gone';
-- A stopped scheduler stays stopped however long ago it beat.
UPDATE taskforge.schedulers x SET started_at = started_at - interval '1 hour', last_heartbeat_at = last_heartbeat_at - interval '1 hour',
       stopped_at = stopped_at - interval '1 hour'
  FROM s WHERE x.scheduler_id = s.id AND s.name = 'gone';

SELECT results_eq($$SELECT s.name, v.liveness FROM s JOIN taskforge.tf_schedulers v ON v.scheduler_id = s.id ORDER BY s.name$$,
                  $$VALUES ('fresh'::text, 'alive'::text), ('gone', 'stopped'), ('quiet', 'alive'), ('silent', 'stale')$$,
                  'alive within 3 beats, stale after more than 3 missed beats, stopped after a stopping beat');
SELECT results_eq($$SELECT name, hostname, pid, heartbeat_seconds FROM taskforge.tf_schedulers WHERE scheduler_id = (SELECT id FROM s WHERE name = 'fresh')$$,
                  $$VALUES ('view-schedulers-fresh'::text, 'host-a'::text, 4242, 100::double precision)$$,
                  'the details of the beat are shown');
SELECT cmp_ok((SELECT seconds_since_heartbeat FROM taskforge.tf_schedulers WHERE scheduler_id = (SELECT id FROM s WHERE name = 'silent')),
              '>', 300::double precision, 'seconds_since_heartbeat counts in seconds');
SELECT cmp_ok((SELECT seconds_since_heartbeat FROM taskforge.tf_schedulers WHERE scheduler_id = (SELECT id FROM s WHERE name = 'quiet')),
              '<', 300::double precision, 'the quiet scheduler is within three beats');

-- A beat brings a stale scheduler back.
CREATE TEMP TABLE hb AS SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM s WHERE name = 'silent'), 'view-schedulers-silent', heartbeat_seconds => 100) AS at;
SELECT is((SELECT liveness FROM taskforge.tf_schedulers WHERE scheduler_id = (SELECT id FROM s WHERE name = 'silent')), 'alive',
          'after a beat the scheduler is alive again');
SELECT is((SELECT last_heartbeat_at FROM taskforge.tf_schedulers WHERE scheduler_id = (SELECT id FROM s WHERE name = 'silent')), (SELECT at FROM hb),
          'last_heartbeat_at is the time tf_scheduler_heartbeat returned');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
