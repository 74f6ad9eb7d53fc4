-- Catalog contract (docs/design.md §7): every public tf_* function exists with its signature, is SECURITY DEFINER with a pinned search_path and a comment; private _tf_* helpers are not SECURITY DEFINER; PUBLIC may execute nothing. The one procedure, tf_maintain, commits between its batches, which neither SECURITY DEFINER nor a SET clause allows: it is SECURITY INVOKER without SET, and only taskforge_scheduler may call it.
BEGIN;
SELECT plan(47);
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
-- run inside callers whose search_path is pinned. And the two row-rule CHECK bodies, called for
-- every row written, which name every operator and type in pg_catalog instead (tried below
-- under a hostile search_path).
SELECT is_empty($$SELECT signature FROM fn
                   WHERE NOT EXISTS (SELECT 1 FROM unnest(coalesce(proconfig, '{}')) c WHERE c = 'search_path=pg_catalog, pg_temp')
                     AND proname NOT IN ('_tf_task_row_ok', '_tf_attempt_row_ok')
                     AND NOT (proname LIKE '\_tf\_%' AND (SELECT l.lanname = 'sql' AND p.provolatile = 'i'
                                                           FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
                                                          WHERE p.oid = fn.oid))$$,
                'every function of the schema pins search_path = pg_catalog, pg_temp (pg_temp last), but inlined private SQL expressions');
SELECT is_empty($$SELECT signature FROM fn WHERE proconfig IS NULL AND proname NOT IN ('_tf_guard', '_tf_guard_batch', '_tf_name_pattern', '_tf_task_state_after', '_tf_attempt_state_after',
                                                                          '_tf_json_too_deep', '_tf_token_ok', '_tf_outcome_ok', '_tf_valid_batch_of_one', '_tf_sorted_at',
                                                                          '_tf_traceparent_ok', '_tf_task_row_ok', '_tf_attempt_row_ok')$$,
                'only the inlined expression helpers and the row-rule CHECK bodies have no SET clause');
-- The row-rule CHECK bodies mean the same under a search_path whose first schema redefines the
-- comparison operators and the text type: a row that keeps the rules passes, one that breaks one
-- is refused with the rule named.
CREATE SCHEMA hostile;
CREATE FUNCTION hostile.never(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false';
CREATE FUNCTION hostile.always(int, int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
DO $$
BEGIN
    EXECUTE 'CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.never)';
    EXECUTE 'CREATE OPERATOR hostile.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.never)';
    EXECUTE 'CREATE OPERATOR hostile.< (LEFTARG = int, RIGHTARG = int, FUNCTION = hostile.always)';
    EXECUTE 'CREATE OPERATOR hostile.<= (LEFTARG = int, RIGHTARG = int, FUNCTION = hostile.always)';
    EXECUTE 'CREATE OPERATOR hostile.>= (LEFTARG = int, RIGHTARG = int, FUNCTION = hostile.always)';
END $$;
CREATE DOMAIN hostile.text AS pg_catalog.int4;
-- What each call gives (a rule's name, or passed), caught without a comparison of its own.
CREATE FUNCTION pg_temp.outcome(statement pg_catalog.text) RETURNS pg_catalog.text LANGUAGE plpgsql AS $$
DECLARE v_constraint pg_catalog.text;
BEGIN
    EXECUTE statement;
    RETURN 'passed';
EXCEPTION WHEN check_violation THEN
    GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
    RETURN v_constraint;
END $$;
SET LOCAL search_path = hostile, pg_catalog, public;
CREATE TEMP TABLE hostile_run AS
SELECT pg_temp.outcome($$SELECT taskforge._tf_task_row_ok('RUNNING', 1, 3, gen_random_uuid(), now(), NULL, NULL, NULL, NULL, NULL)$$) AS good_task,
       pg_temp.outcome($$SELECT taskforge._tf_attempt_row_ok('SUCCEEDED', 'succeeded', now() - interval '1 second', now(), now())$$) AS good_attempt,
       pg_temp.outcome($$SELECT taskforge._tf_task_row_ok('QUEUED', 3, 3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$) AS bad_task,
       pg_temp.outcome($$SELECT taskforge._tf_attempt_row_ok('ABANDONED', 'lease_expired', now() - interval '1 minute', now(),
                                                             now() - interval '1 second')$$) AS bad_attempt;
RESET search_path;
SELECT is((SELECT ARRAY[good_task, good_attempt] FROM hostile_run), ARRAY['passed', 'passed'],
          'the row rules hold for good rows under a hostile search_path');
SELECT is((SELECT bad_task FROM hostile_run), 'tasks_queued_has_budget',
          'the tasks rules still refuse a bad row under a hostile search_path, the rule named');
SELECT is((SELECT bad_attempt FROM hostile_run), 'attempts_abandoned_after_expiry',
          'the attempts rules still refuse a bad row under a hostile search_path, the rule named');
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
