-- tf_prune frees the idempotency key of a deleted task: the same submit then creates a new task.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('prune-key-w1') AS id;
CREATE TEMP TABLE first AS SELECT * FROM taskforge.tf_submit('echo', '{"k": 1}', queue => 'prune_key', idempotency_key => 'prune-key-1');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['prune_key']);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM first), (SELECT id FROM w), 1, 'succeeded', '{"k": 1}');

SELECT results_eq('SELECT state, created FROM first', $$VALUES ('QUEUED'::text, true)$$, 'setup: the key creates a task');
SELECT results_eq($$SELECT task_id, state, created FROM taskforge.tf_submit('echo', '{"k": 1}', queue => 'prune_key', idempotency_key => 'prune-key-1')$$,
                  $$SELECT task_id, 'SUCCEEDED'::text, false FROM first$$, 'before pruning, a replay returns the finished task');
-- Simulate time: it finished a day ago.
UPDATE taskforge.tasks SET finished_at = clock_timestamp() - interval '1 day' WHERE task_id = (SELECT task_id FROM first);
SELECT cmp_ok(taskforge.tf_prune(older_than_seconds => 3600), '>=', 1, 'tf_prune deletes at least that task');
SELECT is_empty('SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM first)', 'the task row is gone');
CREATE TEMP TABLE second AS SELECT * FROM taskforge.tf_submit('echo', '{"k": 1}', queue => 'prune_key', idempotency_key => 'prune-key-1');
SELECT results_eq('SELECT state, created FROM second', $$VALUES ('QUEUED'::text, true)$$, 'the same key now creates a new task');
SELECT isnt((SELECT task_id FROM second), (SELECT task_id FROM first), 'with a new task id');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
