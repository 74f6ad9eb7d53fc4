-- tf_retry refuses a SUCCEEDED, QUEUED, RUNNING or RETRYING task with TF409 and changes nothing.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-conflict-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('s', s.name), queue => 'retry_conflict_' || s.name)) AS task_id
  FROM (VALUES ('succeeded'), ('queued'), ('running'), ('retrying')) s(name);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_conflict_succeeded', 'retry_conflict_running', 'retry_conflict_retrying'], max_tasks => 3);
CREATE TEMP TABLE f AS
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE name = 'succeeded'), (SELECT id FROM w), 1, 'succeeded')
UNION ALL
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE name = 'retrying'), (SELECT id FROM w), 1, 'retryable');
CREATE TEMP TABLE before AS SELECT * FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM sub);

SELECT results_eq($$SELECT s.name, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.name$$,
                  $$VALUES ('queued'::text, 'QUEUED'::text), ('retrying', 'RETRYING'), ('running', 'RUNNING'), ('succeeded', 'SUCCEEDED')$$,
                  'setup: one task in each non-replayable state');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s)', (SELECT task_id FROM sub WHERE name = 'succeeded')), 'TF409',
                 format('task_id: task %s is SUCCEEDED; only FAILED or CANCELLED tasks can be retried', (SELECT task_id FROM sub WHERE name = 'succeeded')),
                 'a SUCCEEDED task is never replayed (TF409)');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s)', (SELECT task_id FROM sub WHERE name = 'queued')), 'TF409',
                 NULL, 'a QUEUED task cannot be retried (TF409)');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s, 5)', (SELECT task_id FROM sub WHERE name = 'running')), 'TF409',
                 NULL, 'a RUNNING task cannot be retried (TF409)');
SELECT throws_ok(format('SELECT * FROM taskforge.tf_retry(%s)', (SELECT task_id FROM sub WHERE name = 'retrying')), 'TF409',
                 NULL, 'a RETRYING task cannot be retried (TF409)');
SELECT results_eq('SELECT task_id, state::text, max_attempts::int, attempt_count, scheduled_at, updated_at, finished_at FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM sub) ORDER BY task_id',
                  'SELECT task_id, state::text, max_attempts::int, attempt_count, scheduled_at, updated_at, finished_at FROM before ORDER BY task_id',
                  'the refused calls changed nothing');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
