-- tf_cancel on a RUNNING task only requests the cancel: the task keeps running, tf_renew reports the request, and a success is still recorded SUCCEEDED.
BEGIN;
SELECT plan(13);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cancel-running-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'cancel_running');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['cancel_running']);
CREATE TEMP TABLE before AS SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub);

SELECT results_eq($$SELECT renewed, cancel_requested FROM taskforge.tf_renew((SELECT task_id FROM sub), (SELECT id FROM w), 1)$$,
                  $$VALUES (true, false)$$, 'before the cancel, renew reports no cancel request');
CREATE TEMP TABLE x1 AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM sub), 'user pressed stop');
SELECT results_eq('SELECT task_state, cancel_requested FROM x1', $$VALUES ('RUNNING'::text, true)$$,
                  'RUNNING: the call reports state RUNNING with cancel_requested = true');
SELECT results_eq($$SELECT state::text, owner_worker_id, attempt_count, finished_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  'SELECT state::text, owner_worker_id, attempt_count, finished_at FROM before',
                  'the task keeps running under its owner, unfinished');
SELECT results_eq($$SELECT cancel_requested_at IS NOT NULL, cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES (true, 'user pressed stop'::text)$$, 'the request and its reason are stored');
SELECT is((SELECT cancel_requested FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM sub)), true,
          'tf_tasks shows the cancel request');
SELECT results_eq($$SELECT renewed, cancel_requested FROM taskforge.tf_renew((SELECT task_id FROM sub), (SELECT id FROM w), 1)$$,
                  $$VALUES (true, true)$$, 'renew still extends the lease and reports cancel_requested = true');

-- A second request keeps the first one (time and reason).
CREATE TEMP TABLE first_req AS SELECT cancel_requested_at, cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub);
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM sub), 'again')$$,
                  $$VALUES ('RUNNING'::text, true)$$, 'a repeated cancel reports the same');
SELECT results_eq($$SELECT cancel_requested_at, cancel_reason FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  'SELECT cancel_requested_at, cancel_reason FROM first_req', 'the first request time and reason are kept');

-- The handler finished anyway: the work happened, so the task SUCCEEDED.
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize((SELECT task_id FROM sub), (SELECT id FROM w), 1, 'succeeded', '{"n": 1}')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'a success after a cancel request is SUCCEEDED');
SELECT results_eq($$SELECT state::text, result FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('SUCCEEDED'::text, '{"n": 1}'::jsonb)$$, 'the task keeps its result');
SELECT results_eq($$SELECT state::text, outcome::text FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('SUCCEEDED'::text, 'succeeded'::text)$$, 'the attempt SUCCEEDED');
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel((SELECT task_id FROM sub))$$,
                  $$VALUES ('SUCCEEDED'::text, true)$$, 'cancelling it now returns SUCCEEDED unchanged');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
