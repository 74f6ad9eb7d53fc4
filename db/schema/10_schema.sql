-- Schema taskforge, owned by the NOLOGIN owner role. Everything after this file is created
-- while the session acts as taskforge_owner (99_finish.sql resets the role).
CREATE SCHEMA taskforge AUTHORIZATION taskforge_owner;
COMMENT ON SCHEMA taskforge IS
    'TaskForge: PostgreSQL-backed background tasks. Call the tf_* functions; read the tf_* views.';
REVOKE ALL ON SCHEMA taskforge FROM PUBLIC;
GRANT USAGE ON SCHEMA taskforge
    TO taskforge_worker, taskforge_scheduler, taskforge_client, taskforge_console;
SET ROLE taskforge_owner;
