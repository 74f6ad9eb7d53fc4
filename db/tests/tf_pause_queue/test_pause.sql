-- tf_pause_queue: a paused queue is skipped by every claim form (one queue, several queues, any queue, finalize-and-claim) while submits still succeed; pausing twice changes nothing.
BEGIN;
SELECT plan(13);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_pause') AS id;
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_pause_a', priority => 10);

SELECT is(taskforge.tf_pause_queue('q_pause_a'), true, 'pausing a running queue returns true');
SELECT is(taskforge.tf_pause_queue('q_pause_a'), false, 'pausing a paused queue returns false');
SELECT ok((SELECT paused_at IS NOT NULL FROM taskforge.queues WHERE queue = 'q_pause_a'), 'paused_at is set');
SELECT lives_ok($$INSERT INTO t SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_pause_a', priority => 10)$$,
                'a submit to a paused queue succeeds');
INSERT INTO t SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_pause_b');

SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_pause_a'], max_tasks => 10)), 0,
          'a claim of the paused queue alone takes nothing');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_pause_a'], max_tasks => 10,
                                                        task_types => ARRAY['noop'])), 0,
          'a claim of the paused queue with a task type filter takes nothing');
CREATE TEMP TABLE two AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_pause_a', 'q_pause_b'], max_tasks => 10);
SELECT results_eq('SELECT queue FROM two', ARRAY['q_pause_b'], 'a claim of two queues takes only from the running one');
INSERT INTO t SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_pause_b');
CREATE TEMP TABLE anyq AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 10);
SELECT results_eq('SELECT queue FROM anyq', ARRAY['q_pause_b'], 'a claim of any queue steps over the paused queue''s higher-priority tasks');
INSERT INTO t SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_pause_b');
CREATE TEMP TABLE fc AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w),
       ARRAY[(SELECT task_id FROM anyq)], ARRAY[1], ARRAY['succeeded'], max_tasks => 10);
SELECT results_eq($$SELECT queue FROM fc WHERE kind = 'claimed'$$, ARRAY['q_pause_b'],
                  'finalize-and-claim steps over the paused queue too');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_pause_a' AND state = 'QUEUED'), 2,
          'the paused queue''s tasks wait QUEUED');

SELECT is(taskforge.tf_resume_queue('q_pause_a'), true, 'resume returns true');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 10)), 2,
          'after resume a claim takes the queue''s tasks');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
