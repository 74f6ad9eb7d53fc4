-- Acting as taskforge_scheduler: recover, promote, prune, prune_workers, scheduler_heartbeat, enqueue_periodic, backoff and schema_version work; views, tables, submit, claim and cancel are refused with 42501.
BEGIN;
SELECT plan(21);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('catalog-as-scheduler-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'catalog_as_scheduler');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['catalog_as_scheduler']);
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = (SELECT task_id FROM sub);
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at FROM taskforge.tasks t
 WHERE x.task_id = t.task_id AND t.task_id = (SELECT task_id FROM sub);
DO $$ BEGIN PERFORM set_config('tftest.task_id', (SELECT task_id FROM sub)::text, true); END $$;

SET LOCAL ROLE taskforge_scheduler;
SELECT is(current_user::text, 'taskforge_scheduler', 'acting as taskforge_scheduler');
SELECT cmp_ok((SELECT recovered FROM taskforge.tf_recover()), '>=', 1, 'scheduler can call tf_recover (the expired task is recovered)');
SELECT lives_ok('SELECT * FROM taskforge.tf_promote()', 'scheduler can call tf_promote');
SELECT lives_ok('SELECT taskforge.tf_prune(3153600000)', 'scheduler can call tf_prune');
SELECT lives_ok('SELECT * FROM taskforge.tf_prune_workers(3153600000)', 'scheduler can call tf_prune_workers');
SELECT lives_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'catalog-as-scheduler')$$, 'scheduler can call tf_scheduler_heartbeat');
SELECT throws_ok('SELECT * FROM taskforge.tf_schedulers', '42501', NULL, 'scheduler cannot SELECT from the tf_schedulers view');
SELECT lives_ok('SELECT * FROM taskforge.tf_enqueue_periodic()', 'scheduler can call tf_enqueue_periodic');
SELECT throws_ok($$SELECT * FROM taskforge.tf_schedule_periodic('as-scheduler', '* * * * *', 'noop')$$, '42501', NULL,
                 'scheduler cannot call tf_schedule_periodic');
SELECT throws_ok('SELECT * FROM taskforge.tf_periodic', '42501', NULL, 'scheduler cannot SELECT from the tf_periodic view');
SELECT throws_ok('SELECT * FROM taskforge.periodic_schedules', '42501', NULL, 'scheduler cannot SELECT from taskforge.periodic_schedules');
SELECT lives_ok('SELECT taskforge.tf_backoff(3)', 'scheduler can call tf_backoff');
SELECT results_eq('SELECT taskforge.tf_schema_version()', ARRAY[1], 'scheduler can read the schema version');
SELECT throws_ok('SELECT * FROM taskforge.tf_tasks', '42501', NULL, 'scheduler cannot SELECT from the tf_tasks view');
SELECT throws_ok('SELECT * FROM taskforge.tf_queue_stats', '42501', NULL, 'scheduler cannot SELECT from the tf_queue_stats view');
SELECT throws_ok('SELECT * FROM taskforge.tasks', '42501', NULL, 'scheduler cannot SELECT from taskforge.tasks');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop')$$, '42501', NULL, 'scheduler cannot call tf_submit');
SELECT throws_ok($$SELECT * FROM taskforge.tf_claim(gen_random_uuid())$$, '42501', NULL, 'scheduler cannot claim');
SELECT throws_ok($$SELECT * FROM taskforge.tf_cancel(current_setting('tftest.task_id')::bigint)$$, '42501', NULL, 'scheduler cannot cancel');
RESET ROLE;

SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub)), 'QUEUED', 'the recovery done as scheduler is recorded');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
