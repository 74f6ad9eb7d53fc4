-- Catalog contract: the schema and every object in it are owned by taskforge_owner, a NOLOGIN, non-superuser role; the TaskForge roles are NOLOGIN group roles and the console is a client.
BEGIN;
SELECT plan(17);
SELECT has_role('taskforge_owner', 'role taskforge_owner exists');
SELECT has_role('taskforge_worker', 'role taskforge_worker exists');
SELECT has_role('taskforge_scheduler', 'role taskforge_scheduler exists');
SELECT has_role('taskforge_client', 'role taskforge_client exists');
SELECT has_role('taskforge_console', 'role taskforge_console exists');
SELECT is((SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = 'taskforge_owner'), false, 'taskforge_owner is NOLOGIN');
SELECT is((SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = 'taskforge_owner'), false,
          'taskforge_owner has no superuser, CREATEROLE, CREATEDB or BYPASSRLS attribute');
SELECT is_empty($$SELECT rolname FROM pg_catalog.pg_roles
                   WHERE rolname IN ('taskforge_worker', 'taskforge_scheduler', 'taskforge_client', 'taskforge_console')
                     AND (rolcanlogin OR rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls)$$,
                'the caller roles are NOLOGIN group roles without special attributes');
SELECT is_member_of('taskforge_client', ARRAY['taskforge_console'], 'taskforge_console is a member of taskforge_client');
SELECT is_empty($$SELECT r.rolname FROM pg_catalog.pg_roles r
                   WHERE r.rolname IN ('taskforge_worker', 'taskforge_scheduler', 'taskforge_client', 'taskforge_console')
                     AND pg_catalog.pg_has_role(r.rolname, 'taskforge_owner', 'MEMBER')$$,
                'no caller role is a member of taskforge_owner');
SELECT schema_owner_is('taskforge', 'taskforge_owner', 'schema taskforge is owned by taskforge_owner');
SELECT cmp_ok((SELECT count(*)::int FROM pg_catalog.pg_class WHERE relnamespace = 'taskforge'::regnamespace AND relkind IN ('r', 'v', 'S')), '>=', 11,
              'the schema holds the tables, views and sequence');
SELECT is_empty($$SELECT relname, relkind FROM pg_catalog.pg_class
                   WHERE relnamespace = 'taskforge'::regnamespace AND relowner <> 'taskforge_owner'::regrole$$,
                'every table, view, sequence and index is owned by taskforge_owner');
SELECT is_empty($$SELECT oid::regprocedure FROM pg_catalog.pg_proc
                   WHERE pronamespace = 'taskforge'::regnamespace AND proowner <> 'taskforge_owner'::regrole$$,
                'every function is owned by taskforge_owner');
SELECT is_empty($$SELECT typname FROM pg_catalog.pg_type
                   WHERE typnamespace = 'taskforge'::regnamespace AND typowner <> 'taskforge_owner'::regrole$$,
                'every type is owned by taskforge_owner');
SELECT is_empty($$SELECT a.grantee::regrole, a.privilege_type
                   FROM pg_catalog.pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
                  WHERE n.nspname = 'taskforge' AND a.grantee <> n.nspowner
                    AND NOT (a.privilege_type = 'USAGE'
                             AND a.grantee IN ('taskforge_worker'::regrole, 'taskforge_scheduler'::regrole,
                                               'taskforge_client'::regrole, 'taskforge_console'::regrole))$$,
                'on the schema only USAGE is granted, and only to the TaskForge roles (nothing to PUBLIC)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
