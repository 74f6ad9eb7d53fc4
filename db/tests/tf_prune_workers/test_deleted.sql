-- tf_prune_workers deletes workers stopped (deregistered) or stale and last heard of longer ago than older_than_seconds once no attempt names them (after tf_prune), and schedulers stopped or stale as long.
BEGIN;
SELECT plan(10);
-- tf_prune_workers acts on every process row: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
DELETE FROM taskforge.workers;
DELETE FROM taskforge.schedulers;
CREATE TEMP TABLE w AS
SELECT s.name, taskforge.tf_register_worker('prune-workers-deleted-' || s.name, queues => ARRAY['prune_workers_deleted']) AS id
  FROM (VALUES ('deregistered'), ('stale'), ('worked')) s(name);
-- "worked" ran one task to the end, then deregistered with the others.
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'prune_workers_deleted');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w WHERE name = 'worked'), ARRAY['prune_workers_deleted']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w WHERE name = 'worked'), 1, 'succeeded');
DO $$ BEGIN PERFORM taskforge.tf_deregister_worker(id) FROM w WHERE name IN ('deregistered', 'worked'); END $$;
CREATE TEMP TABLE s AS SELECT v.name, gen_random_uuid() AS id FROM (VALUES ('stopped'), ('stale')) v(name);
CREATE TEMP TABLE beats AS
SELECT taskforge.tf_scheduler_heartbeat(id, 'prune-workers-deleted-' || name, stopping => name = 'stopped') AS at FROM s;
-- Simulate time: every process was last heard of two hours ago (beats every 5 s: stale after 15 s), and the task finished then.
UPDATE taskforge.workers x
   SET started_at = x.started_at - interval '2 hours', last_heartbeat_at = x.last_heartbeat_at - interval '2 hours',
       stopped_at = x.stopped_at - interval '2 hours'
  FROM w WHERE x.worker_id = w.id;
UPDATE taskforge.schedulers x
   SET started_at = x.started_at - interval '2 hours', last_heartbeat_at = x.last_heartbeat_at - interval '2 hours',
       stopped_at = x.stopped_at - interval '2 hours'
  FROM s WHERE x.scheduler_id = s.id;
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '2 hours' WHERE task_id = (SELECT task_id FROM sub);

SELECT results_eq($$SELECT w.name, v.liveness FROM w JOIN taskforge.tf_workers v ON v.worker_id = w.id ORDER BY w.name$$,
                  $$VALUES ('deregistered'::text, 'stopped'::text), ('stale', 'stale'), ('worked', 'stopped')$$,
                  'setup: two stopped workers and a stale one');
SELECT results_eq($$SELECT s.name, v.liveness FROM s JOIN taskforge.tf_schedulers v ON v.scheduler_id = s.id ORDER BY s.name$$,
                  $$VALUES ('stale'::text, 'stale'::text), ('stopped', 'stopped')$$, 'setup: a stale and a stopped scheduler');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3600)', $$VALUES (2, 2)$$,
                  'two workers and two schedulers last heard of more than an hour ago are deleted');
SELECT results_eq($$SELECT w.name FROM w JOIN taskforge.workers x ON x.worker_id = w.id$$, ARRAY['worked'],
                  'the worker its attempt still names stays');
SELECT is_empty('SELECT * FROM taskforge.schedulers', 'both schedulers are gone');
SELECT is(taskforge.tf_prune(older_than_seconds => 3600), 1, 'tf_prune deletes the task and its attempt');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3600)', $$VALUES (1, 0)$$,
                  'then the worker of that attempt is deleted too');
SELECT is_empty('SELECT * FROM taskforge.workers', 'no worker row is left');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3600)', $$VALUES (0, 0)$$,
                  'a second call finds nothing more');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
