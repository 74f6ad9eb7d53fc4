-- tf_promote: due RETRYING tasks become QUEUED without a new attempt; not-yet-due ones stay RETRYING; next_due_at is the earliest remaining scheduled_at.
BEGIN;
SELECT plan(14);
-- tf_promote acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('promote-due-w1') AS id;
CREATE TEMP TABLE due AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'promote_due', priority => 5);
CREATE TEMP TABLE later AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'promote_due', priority => 1);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_due'], max_tasks => 2);
CREATE TEMP TABLE f AS
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM due), (SELECT id FROM w), 1, 'retryable', error => '{"type": "transient"}')
UNION ALL
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM later), (SELECT id FROM w), 1, 'retryable', error => '{"type": "transient"}');
-- Simulate time: the backoff of "due" has ended; "later" waits one more hour.
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM due);
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() + interval '1 hour' WHERE task_id = (SELECT task_id FROM later);
CREATE TEMP TABLE later_at AS SELECT scheduled_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM later);
CREATE TEMP TABLE due_before AS SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM due);
CREATE TEMP TABLE res AS SELECT * FROM taskforge.tf_promote();

SELECT results_eq('SELECT accepted, task_state FROM f', $$VALUES (true, 'RETRYING'::text), (true, 'RETRYING')$$,
                  'setup: both tasks are RETRYING');
SELECT is((SELECT promoted FROM res), 1, 'one task promoted');
SELECT is((SELECT next_due_at FROM res), (SELECT scheduled_at FROM later_at), 'next_due_at is the scheduled_at of the task still waiting');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM due)), 'QUEUED', 'the due task is QUEUED');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM later)), 'RETRYING', 'the task not yet due stays RETRYING');
SELECT is((SELECT attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM due)), 1, 'promotion does not change attempt_count');
SELECT is((SELECT count(*)::int FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM due)), 1, 'promotion creates no attempt');
SELECT results_eq('SELECT scheduled_at, last_error, finished_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM due)',
                  'SELECT scheduled_at, last_error, finished_at FROM due_before',
                  'promotion keeps scheduled_at and the last error, and sets no finished_at');
SELECT is((SELECT scheduled_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM later)), (SELECT scheduled_at FROM later_at),
          'the waiting task keeps its scheduled_at');

SELECT results_eq('SELECT promoted, next_due_at FROM taskforge.tf_promote()', 'SELECT 0, scheduled_at FROM later_at',
                  'a second call promotes nothing and still reports next_due_at');
SELECT results_eq($$SELECT task_id, attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_due'], max_tasks => 5)$$,
                  'SELECT task_id, 2 FROM due', 'only the promoted task is claimable, as attempt 2');

UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM later);
SELECT results_eq('SELECT promoted, next_due_at FROM taskforge.tf_promote()', $$VALUES (1, NULL::timestamptz)$$,
                  'once due it is promoted, and next_due_at is NULL when nothing waits');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM later)), 'QUEUED', 'the second task is QUEUED');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
