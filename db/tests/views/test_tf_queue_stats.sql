-- tf_queue_stats counts tasks per queue and state, listing every state (with 0) for each queue that has tasks.
BEGIN;
SELECT plan(6);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-stats-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.n, s.target, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'view_stats')) AS task_id
  FROM (VALUES (1, 'queued'), (2, 'queued'), (3, 'running'), (4, 'retrying'), (5, 'succeeded'), (6, 'failed'), (7, 'cancelled'), (8, 'cancelled')) s(n, target);
-- Tasks 7 and 8 are cancelled and 1, 2 scheduled in an hour, so the claim takes exactly tasks 3..6.
CREATE TEMP TABLE hold AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub WHERE n = 7)) UNION ALL SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub WHERE n = 8));
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() + interval '1 hour' WHERE task_id IN (SELECT task_id FROM sub WHERE n IN (1, 2));
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_stats'], max_tasks => 10);
CREATE TEMP TABLE f AS
SELECT s.n, k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1,
       CASE s.target WHEN 'retrying' THEN 'retryable' WHEN 'succeeded' THEN 'succeeded' ELSE 'failed' END) k
 WHERE s.target IN ('retrying', 'succeeded', 'failed');
CREATE TEMP TABLE other AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'view_stats_other');
-- A child of task 1 (QUEUED, due in an hour) waits BLOCKED.
CREATE TEMP TABLE blocked AS
SELECT task_id FROM taskforge.tf_submit('noop', queue => 'view_stats', depends_on => ARRAY[(SELECT task_id FROM sub WHERE n = 1)]);

SELECT is((SELECT count(*)::int FROM c), 4, 'setup: four tasks claimed');
SELECT results_eq($$SELECT state, tasks FROM taskforge.tf_queue_stats WHERE queue = 'view_stats' ORDER BY state$$,
                  $$VALUES ('BLOCKED'::text, 1::bigint), ('CANCELLED', 2), ('FAILED', 1), ('QUEUED', 2), ('RETRYING', 1), ('RUNNING', 1),
                           ('SUCCEEDED', 1)$$,
                  'one row per state with its count');
SELECT results_eq($$SELECT state, tasks FROM taskforge.tf_queue_stats WHERE queue = 'view_stats_other' ORDER BY state$$,
                  $$VALUES ('BLOCKED'::text, 0::bigint), ('CANCELLED', 0), ('FAILED', 0), ('QUEUED', 1), ('RETRYING', 0), ('RUNNING', 0),
                           ('SUCCEEDED', 0)$$,
                  'states without tasks are listed with 0');
SELECT is((SELECT oldest_created_at FROM taskforge.tf_queue_stats WHERE queue = 'view_stats' AND state = 'QUEUED'),
          (SELECT min(created_at) FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM sub WHERE n IN (1, 2))),
          'oldest_created_at is the creation time of the oldest task in that state');
SELECT is((SELECT oldest_created_at FROM taskforge.tf_queue_stats WHERE queue = 'view_stats_other' AND state = 'RUNNING'), NULL::timestamptz,
          'oldest_created_at is NULL for an empty state');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
