-- tf_retry of a FAILED task: QUEUED again, due now, budget max(max_attempts, attempts + extra_attempts); history kept and the next claim is attempt N+1.
BEGIN;
SELECT plan(14);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-failed-w1') AS id;
-- "one": budget 1, ends FAILED after attempt 1. "five": budget 5, ordinary failure on attempt 1.
CREATE TEMP TABLE one AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'retry_failed_one', max_attempts => 1);
CREATE TEMP TABLE five AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'retry_failed_five', max_attempts => 5);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_failed_one', 'retry_failed_five'], max_tasks => 2);
CREATE TEMP TABLE f AS
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM one), (SELECT id FROM w), 1, 'retryable', error => '{"type": "flaky"}')
UNION ALL
SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM five), (SELECT id FROM w), 1, 'failed', error => '{"type": "bug"}');
CREATE TEMP TABLE old_attempt AS SELECT * FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM one);

SELECT results_eq('SELECT task_state FROM f', ARRAY['FAILED', 'FAILED'], 'setup: both tasks FAILED');
CREATE TEMP TABLE r1 AS SELECT *, clock_timestamp() AS after_call FROM taskforge.tf_retry((SELECT task_id FROM one), extra_attempts => 2);
SELECT results_eq('SELECT task_state, max_attempts FROM r1', $$VALUES ('QUEUED'::text, 3)$$,
                  'budget 1 with 1 attempt + 2 extra: QUEUED with max_attempts 3');
SELECT results_eq($$SELECT state::text, max_attempts::int, attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM one)$$,
                  $$VALUES ('QUEUED'::text, 3, 1)$$, 'the stored task is QUEUED with the new budget and its attempt count kept');
SELECT ok((SELECT scheduled_at <= (SELECT after_call FROM r1) AND finished_at IS NULL AND last_error IS NULL AND result IS NULL
             FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM one)),
          'due now, not finished, last_error and result cleared');
SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry((SELECT task_id FROM five))$$,
                  $$VALUES ('QUEUED'::text, 5)$$, 'budget 5 with 1 attempt + 1 extra: max_attempts stays 5 (never lowered)');

-- History is kept: attempt 1 is unchanged and the next claim is attempt 2.
SELECT results_eq('SELECT attempt_number::int, worker_id, state::text, outcome::text, started_at, finished_at, error FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM one)',
                  'SELECT attempt_number::int, worker_id, state::text, outcome::text, started_at, finished_at, error FROM old_attempt',
                  'the failed attempt is unchanged');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_failed_one']);
SELECT results_eq('SELECT task_id, attempt_number, max_attempts FROM c2', 'SELECT task_id, 2, 3 FROM one',
                  'the replayed task is claimable at once and the claim creates attempt 2');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM one), (SELECT id FROM w), 2, 'retryable')$$,
                  $$VALUES (true, 'RETRYING'::text)$$, 'with the raised budget a retryable failure is RETRYING again');
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM one);
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote();
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_failed_one']);
SELECT results_eq('SELECT attempt_number FROM c3', ARRAY[3], 'attempt 3 is the last one allowed');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM one), (SELECT id FROM w), 3, 'retryable')$$,
                  $$VALUES (true, 'FAILED'::text)$$, 'the raised budget is spent after attempt 3: FAILED');
SELECT results_eq($$SELECT attempt_number, state FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM one) ORDER BY attempt_number$$,
                  $$VALUES (1, 'FAILED'::text), (2, 'FAILED'), (3, 'FAILED')$$, 'the history holds all three attempts');
-- A second replay raises the budget again from the attempts so far.
SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry((SELECT task_id FROM one), 4)$$,
                  $$VALUES ('QUEUED'::text, 7)$$, 'replaying again: 3 attempts + 4 extra = 7');
SELECT is((SELECT task_id FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM one)), (SELECT task_id FROM one),
          'the task keeps its id');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
