-- Acting as taskforge_client and taskforge_console: submit, cancel, retry, periodic schedules and every view work; claim, scheduler functions and the tables are refused with 42501.
BEGIN;
SELECT plan(37);
SET LOCAL ROLE taskforge_client;
SELECT is(current_user::text, 'taskforge_client', 'acting as taskforge_client');
SELECT lives_ok($$SELECT set_config('tftest.task_id', (SELECT task_id FROM taskforge.tf_submit('noop', queue => 'catalog_as_client', max_attempts => 2))::text, true)$$,
                'client can call tf_submit');
SELECT results_eq($$SELECT task_id, state, queue FROM taskforge.tf_tasks WHERE queue = 'catalog_as_client'$$,
                  $$SELECT current_setting('tftest.task_id')::bigint, 'QUEUED'::text, 'catalog_as_client'::text$$,
                  'client reads its task through tf_tasks');
SELECT lives_ok('SELECT * FROM taskforge.tf_attempts LIMIT 1', 'client can read tf_attempts');
SELECT lives_ok('SELECT * FROM taskforge.tf_workers LIMIT 1', 'client can read tf_workers');
SELECT lives_ok('SELECT * FROM taskforge.tf_schedulers LIMIT 1', 'client can read tf_schedulers');
SELECT results_eq($$SELECT tasks FROM taskforge.tf_queue_stats WHERE queue = 'catalog_as_client' AND state = 'QUEUED'$$,
                  ARRAY[1::bigint], 'client can read tf_queue_stats');
SELECT lives_ok('SELECT * FROM taskforge.tf_throughput LIMIT 1', 'client can read tf_throughput');
SELECT lives_ok('SELECT * FROM taskforge.tf_throughput_per_minute LIMIT 1', 'client can read tf_throughput_per_minute');
SELECT ok((SELECT count(*) > 0 FROM taskforge.tf_task_types WHERE task_type = 'noop'), 'client can read tf_task_types');
SELECT lives_ok('SELECT * FROM taskforge.tf_invariant_violations LIMIT 1', 'client can read tf_invariant_violations');
SELECT results_eq($$SELECT task_state FROM taskforge.tf_cancel(current_setting('tftest.task_id')::bigint, 'from client')$$,
                  ARRAY['CANCELLED'], 'client can call tf_cancel');
SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry(current_setting('tftest.task_id')::bigint)$$,
                  $$VALUES ('QUEUED'::text, 2)$$, 'client can call tf_retry');
SELECT lives_ok('SELECT taskforge.tf_backoff(1)', 'client can call tf_backoff');
SELECT results_eq($$SELECT created FROM taskforge.tf_schedule_periodic('catalog-as-client', '0 3 * * *', 'noop')$$, ARRAY[true],
                  'client can call tf_schedule_periodic');
SELECT results_eq($$SELECT cron FROM taskforge.tf_periodic WHERE name = 'catalog-as-client'$$, ARRAY['0 3 * * *'],
                  'client reads the schedule through tf_periodic');
SELECT results_eq($$SELECT taskforge.tf_unschedule_periodic('catalog-as-client')$$, ARRAY[true], 'client can call tf_unschedule_periodic');
SELECT throws_ok('SELECT * FROM taskforge.tf_enqueue_periodic()', '42501', NULL, 'client cannot call tf_enqueue_periodic');
SELECT throws_ok('SELECT * FROM taskforge.periodic_schedules', '42501', NULL, 'client cannot SELECT from taskforge.periodic_schedules');
SELECT throws_ok($$SELECT taskforge.tf_register_worker('catalog-as-client')$$, '42501', NULL, 'client cannot register a worker');
SELECT throws_ok($$SELECT * FROM taskforge.tf_claim(gen_random_uuid(), ARRAY['catalog_as_client'])$$, '42501', NULL, 'client cannot claim');
SELECT throws_ok('SELECT * FROM taskforge.tf_promote()', '42501', NULL, 'client cannot call tf_promote');
SELECT throws_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'catalog-as-client')$$, '42501', NULL, 'client cannot call tf_scheduler_heartbeat');
SELECT throws_ok('SELECT taskforge.tf_prune(0)', '42501', NULL, 'client cannot call tf_prune');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(0)', '42501', NULL, 'client cannot call tf_prune_workers');
SELECT throws_ok('SELECT * FROM taskforge.tasks', '42501', NULL, 'client cannot SELECT from taskforge.tasks');
SELECT throws_ok($$DELETE FROM taskforge.attempts$$, '42501', NULL, 'client cannot DELETE from taskforge.attempts');
SELECT throws_ok($$UPDATE taskforge.task_types SET backoff_base_seconds = 0$$, '42501', NULL, 'client cannot UPDATE taskforge.task_types');
RESET ROLE;

SET LOCAL ROLE taskforge_console;
SELECT is(current_user::text, 'taskforge_console', 'acting as taskforge_console');
SELECT results_eq($$SELECT created FROM taskforge.tf_submit('noop', queue => 'catalog_as_console')$$, ARRAY[true], 'console can submit');
SELECT results_eq($$SELECT state FROM taskforge.tf_tasks WHERE queue = 'catalog_as_console'$$, ARRAY['QUEUED'], 'console can read tf_tasks');
SELECT results_eq($$SELECT task_state FROM taskforge.tf_cancel((SELECT task_id FROM taskforge.tf_tasks WHERE queue = 'catalog_as_console'))$$,
                  ARRAY['CANCELLED'], 'console can cancel');
SELECT throws_ok($$SELECT * FROM taskforge.tf_claim(gen_random_uuid())$$, '42501', NULL, 'console cannot claim');
SELECT throws_ok('SELECT * FROM taskforge.workers', '42501', NULL, 'console cannot SELECT from taskforge.workers');
SELECT lives_ok('SELECT * FROM taskforge.tf_periodic', 'console can read tf_periodic');
RESET ROLE;

SELECT results_eq($$SELECT state::text, cancel_reason FROM taskforge.tasks WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                  $$VALUES ('QUEUED'::text, NULL::text)$$, 'the client calls were recorded (cancelled, then replayed)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
