-- Acting as taskforge_worker: register, heartbeat, claim, renew and finalize work; tables, views, submit and the scheduler/client functions are refused with 42501.
BEGIN;
SELECT plan(21);
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('echo', '{"role": "worker"}', queue => 'catalog_as_worker');
-- Ids travel in transaction-local settings, which any role may read.
DO $$ BEGIN PERFORM set_config('tftest.task_id', (SELECT task_id FROM sub)::text, true); END $$;

SET LOCAL ROLE taskforge_worker;
SELECT is(current_user::text, 'taskforge_worker', 'acting as taskforge_worker');
SELECT throws_ok('SELECT * FROM taskforge.tasks', '42501', NULL, 'worker cannot SELECT from taskforge.tasks');
SELECT throws_ok('SELECT * FROM taskforge.attempts', '42501', NULL, 'worker cannot SELECT from taskforge.attempts');
SELECT throws_ok($$UPDATE taskforge.tasks SET priority = 1$$, '42501', NULL, 'worker cannot UPDATE taskforge.tasks');
SELECT throws_ok($$INSERT INTO taskforge.workers (worker_id, name, started_at, last_heartbeat_at) VALUES (gen_random_uuid(), 'x', now(), now())$$,
                 '42501', NULL, 'worker cannot INSERT into taskforge.workers');
SELECT throws_ok('SELECT * FROM taskforge.tf_tasks', '42501', NULL, 'worker cannot SELECT from the tf_tasks view');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'catalog_as_worker')$$, '42501', NULL, 'worker cannot call tf_submit');
SELECT throws_ok('SELECT * FROM taskforge.tf_recover()', '42501', NULL, 'worker cannot call tf_recover');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(0)', '42501', NULL, 'worker cannot call tf_prune_workers');
SELECT throws_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'catalog-as-worker')$$, '42501', NULL,
                 'worker cannot call tf_scheduler_heartbeat');
SELECT throws_ok($$SELECT taskforge.tf_register_task_type('test.as_worker')$$, '42501', NULL, 'worker cannot call tf_register_task_type');
SELECT throws_ok($$SELECT taskforge._tf_invalid('a', 'b')$$, '42501', NULL, 'worker cannot call a private helper');

SELECT lives_ok($$SELECT set_config('tftest.worker_id', taskforge.tf_register_worker('catalog-as-worker')::text, true)$$,
                'worker can call tf_register_worker');
SELECT lives_ok($$SELECT taskforge.tf_heartbeat(current_setting('tftest.worker_id')::uuid)$$, 'worker can call tf_heartbeat');
SELECT results_eq($$SELECT task_id, attempt_number, payload FROM taskforge.tf_claim(current_setting('tftest.worker_id')::uuid, ARRAY['catalog_as_worker'])$$,
                  $$SELECT current_setting('tftest.task_id')::bigint, 1, '{"role": "worker"}'::jsonb$$,
                  'worker can claim the submitted task and sees its payload');
SELECT results_eq($$SELECT renewed FROM taskforge.tf_renew(current_setting('tftest.task_id')::bigint, current_setting('tftest.worker_id')::uuid, 1)$$,
                  ARRAY[true], 'worker can renew its lease');
SELECT results_eq($$SELECT accepted, task_state FROM taskforge.tf_finalize(current_setting('tftest.task_id')::bigint, current_setting('tftest.worker_id')::uuid, 1, 'succeeded', '{"ok": true}')$$,
                  $$VALUES (true, 'SUCCEEDED'::text)$$, 'worker can finalize');
SELECT results_eq('SELECT taskforge.tf_schema_version()', ARRAY[1], 'worker can read the schema version');
SELECT lives_ok($$SELECT taskforge.tf_deregister_worker(current_setting('tftest.worker_id')::uuid)$$, 'worker can deregister');
RESET ROLE;

SELECT results_eq($$SELECT state::text, result FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)$$,
                  $$VALUES ('SUCCEEDED'::text, '{"ok": true}'::jsonb)$$, 'the work done as taskforge_worker is recorded');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
