-- tf_resume_queue: resuming a paused queue returns true and lets claims take its tasks; resuming a running or unknown queue returns false; bad names are TF400.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_resume') AS id;
SELECT is(taskforge.tf_resume_queue('q_resume_never_paused'), false, 'resuming a queue that was never paused returns false');
SELECT is((SELECT paused_at FROM taskforge.queues WHERE queue = 'q_resume_never_paused'), NULL::timestamptz,
          'it stays unpaused');
DO $$ BEGIN PERFORM taskforge.tf_pause_queue('q_resume'); END $$;
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_resume');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_resume'])), 0, 'setup: paused, nothing claimed');
SELECT is(taskforge.tf_resume_queue('q_resume'), true, 'resuming a paused queue returns true');
SELECT is(taskforge.tf_resume_queue('q_resume'), false, 'resuming it again returns false');
SELECT results_eq($$SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_resume'])$$,
                  $$SELECT task_id FROM t$$, 'the resumed queue''s task is claimed');
SELECT throws_ok($$SELECT taskforge.tf_resume_queue('bad queue')$$, 'TF400', NULL, 'a malformed queue is TF400');
SELECT * FROM finish();
ROLLBACK;
