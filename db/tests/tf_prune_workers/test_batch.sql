-- tf_prune_workers deletes the processes heard of longest ago first, at most max_rows workers and max_rows schedulers per call; workers that must stay do not fill a batch.
BEGIN;
SELECT plan(9);
-- tf_prune_workers acts on every process row: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
DELETE FROM taskforge.workers;
DELETE FROM taskforge.schedulers;
-- Five deregistered workers, worker n stopped n hours ago; two more stopped ten hours ago whose attempts remain.
CREATE TEMP TABLE w AS
SELECT s.n, taskforge.tf_register_worker('prune-workers-batch-' || s.n, queues => ARRAY['prune_workers_batch_' || s.n]) AS id
  FROM generate_series(1, 7) s(n);
CREATE TEMP TABLE sub AS
SELECT w.n, (SELECT task_id FROM taskforge.tf_submit('noop', queue => 'prune_workers_batch_' || w.n)) AS task_id FROM w WHERE w.n > 5;
CREATE TEMP TABLE c AS SELECT w.n, k.* FROM w CROSS JOIN LATERAL taskforge.tf_claim(w.id, ARRAY['prune_workers_batch_' || w.n]) k WHERE w.n > 5;
CREATE TEMP TABLE f AS SELECT c.n, k.* FROM c JOIN w USING (n) CROSS JOIN LATERAL taskforge.tf_finalize(c.task_id, w.id, 1, 'succeeded') k;
DO $$ BEGIN PERFORM taskforge.tf_deregister_worker(id) FROM w; END $$;
UPDATE taskforge.workers x
   SET started_at = x.started_at - make_interval(hours => b.h), last_heartbeat_at = x.last_heartbeat_at - make_interval(hours => b.h),
       stopped_at = x.stopped_at - make_interval(hours => b.h)
  FROM (SELECT id, CASE WHEN n > 5 THEN 10 ELSE n END AS h FROM w) b WHERE x.worker_id = b.id;
-- Three schedulers, scheduler n stopped n hours ago.
CREATE TEMP TABLE s AS SELECT g.n, gen_random_uuid() AS id FROM generate_series(1, 3) g(n);
CREATE TEMP TABLE beats AS SELECT taskforge.tf_scheduler_heartbeat(id, 'prune-workers-batch-' || n, stopping => true) AS at FROM s;
UPDATE taskforge.schedulers x
   SET started_at = x.started_at - make_interval(hours => s.n), last_heartbeat_at = x.last_heartbeat_at - make_interval(hours => s.n),
       stopped_at = x.stopped_at - make_interval(hours => s.n)
  FROM s WHERE x.scheduler_id = s.id;

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 2, 'setup: the two oldest workers each ran a task');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 2)', $$VALUES (2, 2)$$,
                  'max_rows => 2 deletes two workers and two schedulers');
SELECT results_eq('SELECT n FROM w JOIN taskforge.workers x ON x.worker_id = w.id ORDER BY n', ARRAY[1, 2, 3, 6, 7],
                  'the two workers stopped longest ago without attempts went first');
SELECT results_eq('SELECT n FROM s JOIN taskforge.schedulers x ON x.scheduler_id = s.id ORDER BY n', ARRAY[1],
                  'and the two schedulers stopped longest ago');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 2)', $$VALUES (2, 1)$$, 'the next call deletes the next ones');
SELECT results_eq('SELECT n FROM w JOIN taskforge.workers x ON x.worker_id = w.id ORDER BY n', ARRAY[1, 6, 7],
                  'then the next oldest two workers');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 2)', $$VALUES (1, 0)$$,
                  'a short batch of each means the work is done');
SELECT results_eq('SELECT n FROM w JOIN taskforge.workers x ON x.worker_id = w.id ORDER BY n', ARRAY[6, 7],
                  'only the workers that attempts name are left');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
