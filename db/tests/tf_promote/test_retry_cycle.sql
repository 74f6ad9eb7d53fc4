-- Full retry cycle: claim -> retryable failure -> RETRYING with backoff -> tf_promote -> claim gives attempt 2 -> succeeded; history FAILED then SUCCEEDED.
BEGIN;
SELECT plan(16);
-- A task type with a fixed 600 s backoff, so "not yet due" does not depend on how fast the machine is.
DO $$ BEGIN PERFORM taskforge.tf_register_task_type('test.promote_cycle', backoff_base_seconds => 600, backoff_cap_seconds => 600, backoff_jitter => 0); END $$;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('promote-cycle-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('test.promote_cycle', queue => 'promote_cycle', max_attempts => 3);
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_cycle']);
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 1, 'retryable',
                                                             error => '{"type": "transient", "message": "try again"}');

SELECT results_eq('SELECT task_id, attempt_number FROM c1', 'SELECT task_id, 1 FROM sub', 'attempt 1 claimed');
SELECT results_eq('SELECT accepted, task_state, reason FROM f1', $$VALUES (true, 'RETRYING'::text, NULL::text)$$,
                  'a retryable failure with budget left makes the task RETRYING');
SELECT is((SELECT scheduled_at - x.finished_at FROM taskforge.tasks t JOIN taskforge.attempts x USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM sub)), interval '600 seconds',
          'scheduled_at = finish time + the task type backoff');
CREATE TEMP TABLE p0 AS SELECT * FROM taskforge.tf_promote();
SELECT cmp_ok((SELECT next_due_at FROM p0), '<=', (SELECT scheduled_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)),
              'next_due_at accounts for the waiting task');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'RETRYING', 'not promoted before its backoff ends');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_cycle'])$$,
                'a RETRYING task is never claimed');

-- Simulate time: the backoff has ended.
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub);
CREATE TEMP TABLE p AS SELECT * FROM taskforge.tf_promote();
SELECT cmp_ok((SELECT promoted FROM p), '>=', 1, 'tf_promote promotes the due task');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED', 'the task is QUEUED');
SELECT is((SELECT count(*)::int FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)), 1,
          'promotion created no attempt');

CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_cycle']);
SELECT results_eq('SELECT task_id, attempt_number FROM c2', 'SELECT task_id, 2 FROM sub', 'the next claim creates attempt 2');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 2, 'succeeded', '{"done": true}')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'attempt 2 succeeds');
SELECT results_eq($$SELECT attempt_number, state, outcome FROM taskforge.tf_attempts WHERE task_id = (SELECT task_id FROM sub) ORDER BY attempt_number$$,
                  $$VALUES (1, 'FAILED'::text, 'retryable'::text), (2, 'SUCCEEDED', 'succeeded')$$,
                  'history is exactly FAILED -> SUCCEEDED');
SELECT is((SELECT error ->> 'message' FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub) AND attempt_number = 1),
          'try again', 'the failed attempt keeps its error');
SELECT results_eq($$SELECT state::text, result, attempt_count FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('SUCCEEDED'::text, '{"done": true}'::jsonb, 2)$$, 'the task SUCCEEDED with its result after 2 attempts');
SELECT is((SELECT current_attempt_state FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)), 'SUCCEEDED',
          'tf_tasks shows the successful attempt as current');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
