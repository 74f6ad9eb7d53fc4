-- Catalog contract: the scheduler's functions (recover, promote, prune, prune_workers, enqueue_periodic), whose LIMIT and time filters come from parameters, always plan with the actual values (plan_cache_mode = force_custom_plan); the claim's pick, the write path of finalize and claim (_tf_turn) and of renewals keep one cached generic plan per statement (force_generic_plan: statements shaped so that plan is good; test_plans.py checks it at scale).
BEGIN;
SELECT plan(10);
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
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_prune_workers carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_prune_workers(double precision, numeric)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY(proconfig), 'tf_enqueue_periodic carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_enqueue_periodic(numeric)'::regprocedure;
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
