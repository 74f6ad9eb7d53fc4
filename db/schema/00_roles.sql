-- TaskForge roles (cluster-wide). Runs as the migrating user, before anything else.
--
-- taskforge_owner      NOLOGIN; owns every object in schema taskforge. SECURITY DEFINER
--                      functions run as this role, so no caller needs a table privilege.
-- taskforge_worker     register, heartbeat, claim, renew, finalize, deregister.
-- taskforge_scheduler  recover, promote, prune.
-- taskforge_client     submit, cancel, retry, read the views.
-- taskforge_console    everything taskforge_client has (the console reads views, submits, cancels).
--
-- The roles are NOLOGIN group roles: a DBA grants them to login roles, for example
--   CREATE ROLE app_worker LOGIN PASSWORD '...' IN ROLE taskforge_worker;
--
-- Creating roles needs CREATEROLE (or superuser). When the migrating user has neither and
-- the roles do not exist yet, this block stops the migration with SQLSTATE 42501 and says
-- what a DBA has to run first. Roles are shared by every database of the cluster: a second
-- TaskForge database reuses them.
DO $roles$
DECLARE
    r text;
    v_can_create boolean;
BEGIN
    SELECT rolsuper OR rolcreaterole INTO v_can_create
      FROM pg_catalog.pg_roles WHERE rolname = current_user;
    FOREACH r IN ARRAY ARRAY['taskforge_owner', 'taskforge_worker', 'taskforge_scheduler',
                             'taskforge_client', 'taskforge_console']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            IF NOT v_can_create THEN
                RAISE EXCEPTION USING
                    ERRCODE = '42501',
                    MESSAGE = format('role %I does not exist and %I may not create roles', r, current_user),
                    HINT = 'Ask a DBA to run: CREATE ROLE taskforge_owner NOLOGIN; CREATE ROLE taskforge_worker NOLOGIN; '
                        || 'CREATE ROLE taskforge_scheduler NOLOGIN; CREATE ROLE taskforge_client NOLOGIN; '
                        || 'CREATE ROLE taskforge_console NOLOGIN IN ROLE taskforge_client; '
                        || format('GRANT taskforge_owner TO %I;', current_user)
                        || ' then run the migration again (see docs/operations.md).';
            END IF;
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created concurrently by another migration of the same cluster
            END;
        END IF;
    END LOOP;

    -- The console may do all a client may do.
    IF NOT pg_catalog.pg_has_role('taskforge_console', 'taskforge_client', 'MEMBER') THEN
        GRANT taskforge_client TO taskforge_console;
    END IF;

    -- The migrating user must be able to SET ROLE taskforge_owner to create objects as it.
    IF NOT pg_catalog.pg_has_role(current_user, 'taskforge_owner', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT taskforge_owner TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION USING
                ERRCODE = '42501',
                MESSAGE = format('%I is not a member of taskforge_owner', current_user),
                HINT = format('Ask a DBA to run: GRANT taskforge_owner TO %I;', current_user);
        END;
    END IF;
END
$roles$;
