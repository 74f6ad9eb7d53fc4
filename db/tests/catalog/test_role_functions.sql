-- Catalog contract: each TaskForge role may execute exactly its functions; tf_register_task_type and the private helpers are executable by none of them.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE callable AS
SELECT r.rolname, p.proname
  FROM pg_catalog.pg_proc p
 CROSS JOIN (VALUES ('taskforge_worker'), ('taskforge_scheduler'), ('taskforge_client'), ('taskforge_console')) r(rolname)
 WHERE p.pronamespace = 'taskforge'::regnamespace
   AND pg_catalog.has_function_privilege(r.rolname, p.oid, 'EXECUTE');

SELECT set_eq($$SELECT proname FROM callable WHERE rolname = 'taskforge_worker'$$,
              ARRAY['tf_register_worker', 'tf_heartbeat', 'tf_deregister_worker', 'tf_claim', 'tf_renew', 'tf_finalize',
                    'tf_renew_many', 'tf_finalize_many', 'tf_finalize_and_claim', 'tf_parent_results', 'tf_backoff', 'tf_schema_version'],
              'taskforge_worker executes exactly register_worker, heartbeat, deregister_worker, claim, renew, finalize, their batch forms, parent_results, backoff, schema_version');
SELECT set_eq($$SELECT proname FROM callable WHERE rolname = 'taskforge_scheduler'$$,
              ARRAY['tf_recover', 'tf_promote', 'tf_prune', 'tf_make_partitions', 'tf_prune_workers', 'tf_scheduler_heartbeat', 'tf_enqueue_periodic', 'tf_backoff',
                    'tf_schema_version', 'tf_maintain'],
              'taskforge_scheduler executes exactly make_partitions, recover, promote, prune, prune_workers, scheduler_heartbeat, enqueue_periodic, backoff, schema_version and the procedure tf_maintain');
SELECT set_eq($$SELECT proname FROM callable WHERE rolname = 'taskforge_client'$$,
              ARRAY['tf_submit', 'tf_submit_many', 'tf_cancel', 'tf_retry', 'tf_pause_queue', 'tf_resume_queue',
                    'tf_set_queue_limit', 'tf_set_queue_aging', 'tf_set_rate_limit', 'tf_set_concurrency_limit', 'tf_schedule_periodic',
                    'tf_unschedule_periodic', 'tf_backoff', 'tf_schema_version'],
              'taskforge_client executes exactly submit, submit_many, cancel, retry, the queue controls, the rate and concurrency limits, schedule/unschedule_periodic, backoff, schema_version');
SELECT set_eq($$SELECT proname FROM callable WHERE rolname = 'taskforge_console'$$,
              $$SELECT proname FROM callable WHERE rolname = 'taskforge_client'$$,
              'taskforge_console executes exactly what taskforge_client does');
SELECT is_empty($$SELECT rolname FROM callable WHERE proname = 'tf_register_task_type'$$,
                'no TaskForge role may call tf_register_task_type');
SELECT is_empty($$SELECT rolname, proname FROM callable WHERE proname LIKE '\_tf\_%'$$,
                'no TaskForge role may call a private _tf_* helper');
-- The grants are direct: the console holds no function grant of its own, it inherits them from taskforge_client.
SELECT is_empty($$SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
                   WHERE p.pronamespace = 'taskforge'::regnamespace AND a.grantee = 'taskforge_console'::regrole$$,
                'taskforge_console has no function grant of its own');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
