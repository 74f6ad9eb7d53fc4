-- tf_prune_workers keeps every live process (however long ago it started, and a silent one until its stale rule says so, even with older_than_seconds 0), processes last heard of within older_than_seconds, a worker that attempts still name and the owner of a RUNNING task.
BEGIN;
SELECT plan(12);
-- tf_prune_workers acts on every process row: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
DELETE FROM taskforge.workers;
DELETE FROM taskforge.schedulers;
CREATE TEMP TABLE w AS
SELECT s.name, taskforge.tf_register_worker('prune-workers-kept-' || s.name, heartbeat_seconds => s.beat) AS id
  FROM (VALUES ('alive', 5), ('slow_beat', 3600), ('recent_stop', 5), ('recent_stale', 5),
               ('owner', 5), ('abandoned', 5), ('finished', 5)) s(name, beat);
-- "owner" runs a task under a valid lease; "abandoned" lost its task to recovery (QUEUED again); "finished" ran one to the end.
CREATE TEMP TABLE sub AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', queue => 'prune_workers_kept_' || s.name)) AS task_id
  FROM (VALUES ('owner'), ('abandoned'), ('finished')) s(name);
CREATE TEMP TABLE c AS
SELECT s.name, k.* FROM sub s JOIN w USING (name)
 CROSS JOIN LATERAL taskforge.tf_claim(w.id, ARRAY['prune_workers_kept_' || s.name]) k;
CREATE TEMP TABLE f AS
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE name = 'finished'), (SELECT id FROM w WHERE name = 'finished'), 1, 'succeeded');
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub WHERE name = 'abandoned');
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub WHERE name = 'abandoned');
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();
DO $$ BEGIN PERFORM taskforge.tf_deregister_worker(id) FROM w WHERE name IN ('recent_stop', 'abandoned', 'finished'); END $$;
CREATE TEMP TABLE s AS
SELECT v.name, v.beat, gen_random_uuid() AS id FROM (VALUES ('alive', 5), ('slow_beat', 3600), ('recent_stop', 5), ('recent_stale', 5)) v(name, beat);
CREATE TEMP TABLE beats AS
SELECT taskforge.tf_scheduler_heartbeat(id, 'prune-workers-kept-' || name, heartbeat_seconds => beat, stopping => name = 'recent_stop') AS at FROM s;
-- Simulate time: "alive" started two days ago and beats; "slow_beat" (a beat an hour, stale after three) was last heard of two
-- hours ago; "recent_*" ten minutes ago; "owner", "abandoned" and "finished" two hours ago.
CREATE TEMP TABLE back AS
SELECT * FROM (VALUES ('alive', interval '0'), ('slow_beat', interval '2 hours'), ('recent_stop', interval '10 minutes'),
                      ('recent_stale', interval '10 minutes'), ('owner', interval '2 hours'), ('abandoned', interval '2 hours'),
                      ('finished', interval '2 hours')) b(name, last_heard);
UPDATE taskforge.workers x
   SET started_at = x.started_at - interval '2 days', last_heartbeat_at = x.last_heartbeat_at - b.last_heard,
       stopped_at = x.stopped_at - b.last_heard
  FROM w JOIN back b USING (name) WHERE x.worker_id = w.id;
UPDATE taskforge.schedulers x
   SET started_at = x.started_at - interval '2 days', last_heartbeat_at = x.last_heartbeat_at - b.last_heard,
       stopped_at = x.stopped_at - b.last_heard
  FROM s JOIN back b USING (name) WHERE x.scheduler_id = s.id;

SELECT results_eq($$SELECT w.name, v.liveness, v.running_tasks FROM w JOIN taskforge.tf_workers v ON v.worker_id = w.id ORDER BY w.name$$,
                  $$VALUES ('abandoned'::text, 'stopped'::text, 0::bigint), ('alive', 'alive', 0), ('finished', 'stopped', 0),
                           ('owner', 'stale', 1), ('recent_stale', 'stale', 0), ('recent_stop', 'stopped', 0), ('slow_beat', 'alive', 0)$$,
                  'setup: two live workers, four gone (one of them owns a RUNNING task)');
SELECT results_eq($$SELECT s.name, v.liveness FROM s JOIN taskforge.tf_schedulers v ON v.scheduler_id = s.id ORDER BY s.name$$,
                  $$VALUES ('alive'::text, 'alive'::text), ('recent_stale', 'stale'), ('recent_stop', 'stopped'), ('slow_beat', 'alive')$$,
                  'setup: two live schedulers, two gone');
SELECT results_eq($$SELECT s.name, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.name$$,
                  $$VALUES ('abandoned'::text, 'QUEUED'::text), ('finished', 'SUCCEEDED'), ('owner', 'RUNNING')$$,
                  'setup: the tasks of the workers with attempts');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3600)', $$VALUES (0, 0)$$,
                  'with a retention of an hour nothing is deleted');
SELECT is((SELECT count(*)::int FROM taskforge.workers), 7, 'every worker row stays');
SELECT is((SELECT count(*)::int FROM taskforge.schedulers), 4, 'every scheduler row stays');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 0)', $$VALUES (2, 2)$$,
                  'older_than_seconds => 0 deletes the processes gone ten minutes ago');
SELECT results_eq($$SELECT w.name FROM w JOIN taskforge.workers x ON x.worker_id = w.id ORDER BY w.name$$,
                  ARRAY['abandoned', 'alive', 'finished', 'owner', 'slow_beat'],
                  'live workers, workers that attempts name and the owner of a RUNNING task stay');
SELECT results_eq($$SELECT s.name FROM s JOIN taskforge.schedulers x ON x.scheduler_id = s.id ORDER BY s.name$$,
                  ARRAY['alive', 'slow_beat'], 'live schedulers stay, also one silent for longer than older_than_seconds');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE name = 'owner'), (SELECT id FROM w WHERE name = 'owner'), 1, 'succeeded')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'the running task is untouched and its owner finalizes it');
SELECT lives_ok($$SELECT taskforge.tf_heartbeat((SELECT id FROM w WHERE name = 'slow_beat'))$$, 'a live worker still beats');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
