-- tf_prune deletes only terminal tasks finished longer ago than older_than_seconds, with their attempts; live tasks and recent terminal ones stay.
BEGIN;
SELECT plan(11);
-- tf_prune acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('prune-retention-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('s', s.name), queue => 'prune_retention')) AS task_id
  FROM (VALUES ('old_succeeded'), ('old_failed'), ('old_cancelled'), ('new_succeeded'), ('queued'), ('running'), ('retrying')) s(name);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['prune_retention'], max_tasks => 7);
-- Claim took all seven; put each in its state.
CREATE TEMP TABLE f AS
SELECT s.name, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1,
       CASE s.name WHEN 'old_failed' THEN 'failed' WHEN 'old_cancelled' THEN 'cancelled' WHEN 'retrying' THEN 'retryable' ELSE 'succeeded' END) k
 WHERE s.name NOT IN ('queued', 'running');
-- "queued": recover it to QUEUED (its lease expired); "running" keeps its lease.
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub WHERE name = 'queued');
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub WHERE name = 'queued');
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();
-- Simulate time: the old tasks finished two hours ago; every live task was created and scheduled long ago too.
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '2 hours'
 WHERE task_id IN (SELECT task_id FROM sub WHERE name LIKE 'old%');
UPDATE taskforge.tasks SET created_at = clock_timestamp() - interval '3 hours', updated_at = clock_timestamp() - interval '3 hours',
                           scheduled_at = clock_timestamp() - interval '3 hours'
 WHERE task_id IN (SELECT task_id FROM sub WHERE name IN ('queued', 'running', 'retrying'));

SELECT results_eq($$SELECT s.name, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.name$$,
                  $$VALUES ('new_succeeded'::text, 'SUCCEEDED'::text), ('old_cancelled', 'CANCELLED'), ('old_failed', 'FAILED'),
                           ('old_succeeded', 'SUCCEEDED'), ('queued', 'QUEUED'), ('retrying', 'RETRYING'), ('running', 'RUNNING')$$,
                  'setup: one task per state, three of them finished two hours ago');
SELECT is(taskforge.tf_prune(older_than_seconds => 3600), 3, 'three tasks finished more than an hour ago are deleted');
SELECT results_eq($$SELECT s.name FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.name$$,
                  ARRAY['new_succeeded', 'queued', 'retrying', 'running'], 'the recent terminal task and every live task remain');
SELECT is_empty($$SELECT * FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM sub WHERE name LIKE 'old%')$$,
                'the attempts of the deleted tasks are gone');
SELECT is((SELECT count(*)::int FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM sub WHERE name NOT LIKE 'old%')), 4,
          'the attempts of the remaining tasks are kept');
SELECT is(taskforge.tf_prune(older_than_seconds => 3600), 0, 'a second call finds nothing more');
SELECT is(taskforge.tf_prune(older_than_seconds => 3 * 3600), 0, 'a longer retention deletes nothing already deleted');
SELECT is(taskforge.tf_prune(older_than_seconds => 0), 1, 'older_than_seconds => 0 deletes the terminal task that just finished');
SELECT results_eq($$SELECT s.name FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.name$$,
                  ARRAY['queued', 'retrying', 'running'], 'QUEUED, RUNNING and RETRYING tasks are never pruned');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE name = 'running'), (SELECT id FROM w), 1, 'succeeded')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'the running task is untouched and finalizes normally');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
