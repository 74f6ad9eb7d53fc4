-- Catalog contract: the hot-path functions whose LIMIT or filters come from parameters always plan with the actual values (plan_cache_mode = force_custom_plan).
BEGIN;
SELECT plan(5);
SELECT ok('plan_cache_mode=force_custom_plan' = ANY (proconfig), 'tf_claim carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_claim(uuid, text[], double precision, int, text[])'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY (proconfig), 'tf_promote carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_promote(int)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY (proconfig), 'tf_recover carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_recover(int)'::regprocedure;
SELECT ok('plan_cache_mode=force_custom_plan' = ANY (proconfig), 'tf_prune carries plan_cache_mode=force_custom_plan')
  FROM pg_catalog.pg_proc WHERE oid = 'taskforge.tf_prune(double precision, int)'::regprocedure;
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
