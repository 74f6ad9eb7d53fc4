-- Catalog contract (docs/design.md §7): every public tf_* function exists with its signature, is SECURITY DEFINER with a pinned search_path and a comment; private _tf_* helpers are not SECURITY DEFINER; PUBLIC may execute nothing. The one procedure, tf_maintain, commits between its batches, which neither SECURITY DEFINER nor a SET clause allows: it is SECURITY INVOKER without SET, and only taskforge_scheduler may call it.
BEGIN;
SELECT plan(44);
-- The public API, with the argument types of docs/design.md §5 (tf_register_worker has its appended heartbeat_seconds).
SELECT has_function('taskforge', 'tf_submit', ARRAY['text', 'jsonb', 'text', 'numeric', 'numeric', 'timestamp with time zone', 'text', 'double precision',
                                                   'double precision', 'boolean', 'text', 'bigint[]', 'text', 'text', 'text'], 'tf_submit exists');
SELECT has_function('taskforge', 'tf_register_worker', ARRAY['text', 'text', 'numeric', 'text[]', 'text[]', 'double precision'], 'tf_register_worker exists');
SELECT has_function('taskforge', 'tf_heartbeat', ARRAY['uuid'], 'tf_heartbeat exists');
SELECT has_function('taskforge', 'tf_deregister_worker', ARRAY['uuid'], 'tf_deregister_worker exists');
SELECT has_function('taskforge', 'tf_scheduler_heartbeat', ARRAY['uuid', 'text', 'text', 'numeric', 'double precision', 'boolean'], 'tf_scheduler_heartbeat exists');
SELECT has_function('taskforge', 'tf_claim', ARRAY['uuid', 'text[]', 'double precision', 'numeric', 'text[]'], 'tf_claim exists');
SELECT has_function('taskforge', 'tf_renew', ARRAY['numeric', 'uuid', 'numeric', 'double precision'], 'tf_renew exists');
SELECT has_function('taskforge', 'tf_finalize', ARRAY['numeric', 'uuid', 'numeric', 'text', 'jsonb', 'jsonb', 'text'], 'tf_finalize exists');
SELECT has_function('taskforge', 'tf_recover', ARRAY['numeric'], 'tf_recover exists');
SELECT has_function('taskforge', 'tf_promote', ARRAY['numeric'], 'tf_promote exists');
SELECT has_function('taskforge', 'tf_cancel', ARRAY['numeric', 'text'], 'tf_cancel exists');
SELECT has_function('taskforge', 'tf_retry', ARRAY['numeric', 'numeric'], 'tf_retry exists');
SELECT has_function('taskforge', 'tf_prune', ARRAY['double precision', 'numeric'], 'tf_prune exists');
SELECT has_function('taskforge', 'tf_prune_workers', ARRAY['double precision', 'numeric'], 'tf_prune_workers exists');
SELECT has_function('taskforge', 'tf_backoff', ARRAY['numeric', 'double precision', 'double precision', 'double precision'], 'tf_backoff exists');
SELECT has_function('taskforge', 'tf_schema_version', ARRAY[]::text[], 'tf_schema_version exists');
SELECT has_function('taskforge', 'tf_finalize_many', ARRAY['uuid', 'numeric[]', 'numeric[]', 'text[]', 'jsonb[]', 'jsonb[]'], 'tf_finalize_many exists');
SELECT has_function('taskforge', 'tf_renew_many', ARRAY['uuid', 'numeric[]', 'numeric[]', 'double precision'], 'tf_renew_many exists');
SELECT has_function('taskforge', 'tf_finalize_and_claim', ARRAY['uuid', 'numeric[]', 'numeric[]', 'text[]', 'jsonb[]', 'jsonb[]', 'text[]', 'double precision', 'numeric', 'text[]'], 'tf_finalize_and_claim exists');
SELECT has_function('taskforge', 'tf_submit_many', ARRAY['jsonb'], 'tf_submit_many exists');
SELECT has_function('taskforge', 'tf_pause_queue', ARRAY['text'], 'tf_pause_queue exists');
SELECT has_function('taskforge', 'tf_resume_queue', ARRAY['text'], 'tf_resume_queue exists');
SELECT has_function('taskforge', 'tf_set_queue_limit', ARRAY['text', 'numeric'], 'tf_set_queue_limit exists');
SELECT has_function('taskforge', 'tf_set_rate_limit', ARRAY['text', 'double precision', 'numeric'], 'tf_set_rate_limit exists');
SELECT has_function('taskforge', 'tf_set_concurrency_limit', ARRAY['text', 'numeric'], 'tf_set_concurrency_limit exists');
SELECT has_function('taskforge', 'tf_set_queue_aging', ARRAY['text', 'double precision'], 'tf_set_queue_aging exists');
SELECT has_function('taskforge', 'tf_parent_results', ARRAY['numeric', 'uuid', 'numeric'], 'tf_parent_results exists');
SELECT has_function('taskforge', 'tf_schedule_periodic', ARRAY['text', 'text', 'text', 'jsonb', 'text', 'numeric', 'numeric', 'text'], 'tf_schedule_periodic exists');
SELECT has_function('taskforge', 'tf_unschedule_periodic', ARRAY['text'], 'tf_unschedule_periodic exists');
SELECT has_function('taskforge', 'tf_enqueue_periodic', ARRAY['numeric'], 'tf_enqueue_periodic exists');
SELECT has_function('taskforge', 'tf_register_task_type', ARRAY['text', 'double precision', 'double precision', 'double precision', 'text', 'double precision'], 'tf_register_task_type exists');

CREATE TEMP TABLE fn AS
SELECT p.oid, p.oid::regprocedure::text AS signature, p.proname, p.prosecdef, p.proconfig, p.proacl,
       obj_description(p.oid, 'pg_proc') AS comment, p.prokind
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'taskforge'::regnamespace;

SELECT is((SELECT array_agg(format('%s secdef=%s set=%s', proname, prosecdef, proconfig IS NOT NULL)) FROM fn WHERE prokind = 'p'),
          ARRAY['tf_maintain secdef=f set=f'],
          'tf_maintain is the one procedure: SECURITY INVOKER, no SET clause (so it may COMMIT)');
SELECT ok(has_function_privilege('taskforge_scheduler',
              'taskforge.tf_maintain(double precision,double precision,double precision,numeric,bigint,bigint,bigint,bigint)',
              'EXECUTE')
          AND NOT has_function_privilege('taskforge_client',
              'taskforge.tf_maintain(double precision,double precision,double precision,numeric,bigint,bigint,bigint,bigint)',
              'EXECUTE'),
          'taskforge_scheduler may CALL tf_maintain, taskforge_client may not');
DELETE FROM fn WHERE prokind = 'p' AND proname = 'tf_maintain';  -- the function rules below

SELECT cmp_ok((SELECT count(*)::int FROM fn WHERE proname LIKE 'tf\_%'), '>=', 15, 'at least the 15 public functions are present');
SELECT cmp_ok((SELECT count(*)::int FROM fn WHERE proname LIKE '\_tf\_%'), '>=', 5, 'the private helpers are present');
SELECT is_empty($$SELECT signature FROM fn WHERE proname LIKE 'tf\_%' AND NOT prosecdef$$,
                'every public tf_* function is SECURITY DEFINER');
SELECT is_empty($$SELECT signature FROM fn WHERE proname LIKE 'tf\_%'
                    AND NOT EXISTS (SELECT 1 FROM unnest(coalesce(proconfig, '{}')) c WHERE c LIKE 'search\_path=%')$$,
                'every public tf_* function pins search_path in proconfig');
-- Exempt: private IMMUTABLE LANGUAGE sql expression helpers, which a SET clause would keep
-- PostgreSQL from inlining into the batch statements; they use only built-in operators and
-- run inside callers whose search_path is pinned.
SELECT is_empty($$SELECT signature FROM fn
                   WHERE NOT EXISTS (SELECT 1 FROM unnest(coalesce(proconfig, '{}')) c WHERE c = 'search_path=pg_catalog, pg_temp')
                     AND NOT (proname LIKE '\_tf\_%' AND (SELECT l.lanname = 'sql' AND p.provolatile = 'i'
                                                           FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
                                                          WHERE p.oid = fn.oid))$$,
                'every function of the schema pins search_path = pg_catalog, pg_temp (pg_temp last), but inlined private SQL expressions');
SELECT is_empty($$SELECT signature FROM fn WHERE proconfig IS NULL AND proname NOT IN ('_tf_guard', '_tf_guard_batch', '_tf_name_pattern', '_tf_task_state_after', '_tf_attempt_state_after',
                                                                          '_tf_json_too_deep', '_tf_token_ok', '_tf_outcome_ok', '_tf_valid_batch_of_one', '_tf_sorted_at',
                                                                          '_tf_traceparent_ok')$$,
                'only the inlined expression helpers have no SET clause');
SELECT is_empty($$SELECT signature FROM fn WHERE proname LIKE 'tf\_%' AND (comment IS NULL OR btrim(comment) = '')$$,
                'every public tf_* function has a COMMENT');
SELECT is_empty($$SELECT signature FROM fn WHERE proname LIKE '\_tf\_%' AND prosecdef$$,
                'no private _tf_* helper is SECURITY DEFINER');
SELECT is_empty($$SELECT signature FROM fn WHERE proname NOT LIKE 'tf\_%' AND proname NOT LIKE '\_tf\_%'$$,
                'every function of the schema is a tf_* or _tf_* function');
-- A NULL proacl means the default privileges, which include EXECUTE for PUBLIC.
SELECT is_empty($$SELECT signature FROM fn
                   WHERE proacl IS NULL
                      OR EXISTS (SELECT 1 FROM aclexplode(proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')$$,
                'PUBLIC has no EXECUTE on any function of the schema');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
