-- taskforge.tf_schema_version() -> int
--
-- Purpose:    the version of the SQL API installed in this database. Workers read it at start
--             and refuse to run against a version newer than they know. It changes whenever a
--             migration changes a public signature or a behaviour clients depend on.
-- Returns:    int (1 for the first release).
-- Errors:     none.  Locks: none.  Clock: none.  By hand: yes.
CREATE OR REPLACE FUNCTION taskforge.tf_schema_version()
RETURNS int
LANGUAGE plpgsql
STABLE  -- not IMMUTABLE: a migration changes the answer, so no plan may fold it
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN 1;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_schema_version() IS
    'Version of the installed TaskForge SQL API (int). Workers refuse to start against an unknown newer version.';
REVOKE ALL ON FUNCTION taskforge.tf_schema_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_schema_version()
    TO taskforge_worker, taskforge_scheduler, taskforge_client;
