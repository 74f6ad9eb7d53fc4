-- Catalog contract: the scheduler's functions (recover, promote, prune, prune_workers, enqueue_periodic), whose LIMIT and time filters come from parameters, always plan with the actual values (plan_cache_mode = force_custom_plan), except the prune's deletes (_tf_prune_rows: force_generic_plan, so that the foreign key's cascade, one query per deleted task, is not planned again for each); the claim's pick, the write path of finalize and claim (_tf_turn) and of renewals keep one cached generic plan per statement (force_generic_plan: statements shaped so that plan is good; test_plans.py checks it at scale). Every public function that returns exactly one row says so to the planner (ROWS 1): at the default estimate of 1,000 rows, the scheduler's pass (tf_recover, tf_promote and tf_enqueue_periodic joined in one statement) was estimated at 10^9 rows and JIT-compiled on every call, about 100 ms a pass.
BEGIN;
SELECT plan(12);
SELECT ok('plan_cache_mode=force_generic_plan' = ANY(proconfig), '_tf_claim_pick carries plan_cache_mode=force_generic_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_claim_pick(uuid, text[], double precision, int, text[], timestamptz, bigint[], int[])'::regprocedure;
SELECT ok('plan_cache_mode=force_generic_plan' = ANY(proconfig), '_tf_turn carries plan_cache_mode=force_generic_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_turn(uuid, bigint[], int[], text[], jsonb[], jsonb[], bigint[], double precision, timestamptz)'::regprocedure;
SELECT ok('plan_cache_mode=force_generic_plan' = ANY(proconfig), '_tf_renew_attempts carries plan_cache_mode=force_generic_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_renew_attempts(uuid, bigint[], int[], double precision)'::regprocedure;
SELECT ok(proconfig IS NULL OR NOT ('plan_cache_mode=force_custom_plan' = ANY(proconfig)), 'tf_claim is no longer re-planned on every call')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_claim(uuid, text[], double precision, numeric, text[])'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_promote carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_promote(numeric)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_recover carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_recover(numeric)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_prune carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_prune(double precision, numeric)'::regprocedure;
SELECT ok('plan_cache_mode=force_generic_plan' = ANY(proconfig), '_tf_prune_rows carries plan_cache_mode=force_generic_plan (the cascade to attempts is planned once, not for every deleted task)')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_prune_rows(bigint[], timestamptz)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_prune_workers carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_prune_workers(double precision, numeric)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_enqueue_periodic carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_enqueue_periodic(numeric)'::regprocedure;
SELECT set_eq(
    $$SELECT p.proname::text FROM pg_catalog.pg_proc p
       WHERE p.pronamespace = 'taskforge'::regnamespace AND p.proname LIKE 'tf\_%' AND p.proretset AND p.prorows = 1$$,
    ARRAY['tf_submit', 'tf_renew', 'tf_finalize', 'tf_recover', 'tf_promote', 'tf_cancel', 'tf_retry', 'tf_prune_workers',
          'tf_schedule_periodic', 'tf_enqueue_periodic'],
    'the public functions that return exactly one row declare ROWS 1, and only they');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
