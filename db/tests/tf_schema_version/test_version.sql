-- tf_schema_version reports the installed API version.
BEGIN;
SELECT plan(4);
SELECT has_function('taskforge', 'tf_schema_version', ARRAY[]::text[], 'tf_schema_version() exists');
SELECT is(taskforge.tf_schema_version(), 1, 'the first release is version 1');
SELECT is((SELECT provolatile::text FROM pg_proc WHERE oid = 'taskforge.tf_schema_version()'::regprocedure), 's',
          'tf_schema_version is STABLE: a migration changes it, so no plan may fold it');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
