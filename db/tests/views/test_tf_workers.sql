-- tf_workers computes liveness from database time: alive, stale after more than 3 * heartbeat_seconds without a beat, stopped once deregistered; running_tasks counts owned RUNNING tasks.
BEGIN;
SELECT plan(10);
CREATE TEMP TABLE w AS
SELECT s.name, taskforge.tf_register_worker('view-workers-' || s.name, hostname => 'host-a', pid => 4242, queues => ARRAY['view_workers'],
                                            heartbeat_seconds => 100) AS id
  FROM (VALUES ('fresh'), ('quiet'), ('silent'), ('gone')) s(name);
-- Simulate time (heartbeat every 100 s, stale after 300 s): "quiet" beat 250 s ago, "silent" and "gone" 350 s ago.
UPDATE taskforge.workers x SET started_at = started_at - make_interval(secs => d.back), last_heartbeat_at = last_heartbeat_at - make_interval(secs => d.back)
  FROM (VALUES ('quiet', 250), ('silent', 350), ('gone', 350)) d(name, back) JOIN w USING (name)
 WHERE x.worker_id = w.id;
DO $$ BEGIN PERFORM taskforge.tf_deregister_worker((SELECT id FROM w WHERE name = 'gone')); END $$;

SELECT results_eq($$SELECT w.name, v.liveness FROM w JOIN taskforge.tf_workers v ON v.worker_id = w.id ORDER BY w.name$$,
                  $$VALUES ('fresh'::text, 'alive'::text), ('gone', 'stopped'), ('quiet', 'alive'), ('silent', 'stale')$$,
                  'alive within 3 beats, stale after more than 3 missed beats, stopped once deregistered');
SELECT results_eq($$SELECT name, hostname, pid, queues, heartbeat_seconds FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'fresh')$$,
                  $$VALUES ('view-workers-fresh'::text, 'host-a'::text, 4242, ARRAY['view_workers'], 100::double precision)$$,
                  'registration details are shown');
SELECT cmp_ok((SELECT seconds_since_heartbeat FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'silent')),
              '>', 300::double precision, 'seconds_since_heartbeat counts in seconds');
SELECT cmp_ok((SELECT seconds_since_heartbeat FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'quiet')),
              '<', 300::double precision, 'the quiet worker is within three beats');
SELECT ok((SELECT stopped_at IS NOT NULL FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'gone')),
          'stopped_at is shown for a deregistered worker');

-- A beat brings a stale worker back.
CREATE TEMP TABLE hb AS SELECT taskforge.tf_heartbeat((SELECT id FROM w WHERE name = 'silent')) AS at;
SELECT is((SELECT liveness FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'silent')), 'alive',
          'after a heartbeat the worker is alive again');
SELECT is((SELECT last_heartbeat_at FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'silent')), (SELECT at FROM hb),
          'last_heartbeat_at is the time tf_heartbeat returned');

-- running_tasks counts the RUNNING tasks a worker owns.
CREATE TEMP TABLE sub AS
SELECT (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', n), queue => 'view_workers')) AS task_id FROM generate_series(1, 3) n;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w WHERE name = 'fresh'), ARRAY['view_workers'], max_tasks => 3);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT min(task_id) FROM c), (SELECT id FROM w WHERE name = 'fresh'), 1, 'succeeded');
SELECT is((SELECT running_tasks FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'fresh')), 2::bigint,
          'running_tasks counts the owned RUNNING tasks (3 claimed, 1 finished)');
SELECT is((SELECT running_tasks FROM taskforge.tf_workers WHERE worker_id = (SELECT id FROM w WHERE name = 'quiet')), 0::bigint,
          'a worker without tasks has running_tasks 0');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
