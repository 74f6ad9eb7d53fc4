-- Catalog contract: no TaskForge role (and not PUBLIC) has any privilege on a table or sequence; clients and the console may SELECT every view, workers and schedulers none.
BEGIN;
SELECT plan(11);
SELECT tables_are('taskforge', ARRAY['tasks', 'attempts', 'workers', 'schedulers', 'task_types', 'queues', 'periodic_schedules',
                                     'task_dependencies', 'rate_limits', 'concurrency_keys', 'ordering_keys', 'maintenance_errors',
                                     'idempotency_keys', 'history_layout', 'history_partitions'],
                  'the schema has exactly the fifteen tables');
SELECT views_are('taskforge', ARRAY['tf_tasks', 'tf_attempts', 'tf_workers', 'tf_schedulers', 'tf_queue_stats', 'tf_queues', 'tf_throughput',
                                    'tf_throughput_per_minute', 'tf_task_types', 'tf_periodic', 'tf_invariant_violations',
                                    'tf_snapshot_holders', 'tf_task_dependencies', 'tf_rate_limits', 'tf_concurrency_keys',
                                    'tf_maintenance_errors'],
                 'the schema has exactly the sixteen tf_* views');
CREATE TEMP TABLE roles AS
SELECT * FROM (VALUES ('taskforge_worker'), ('taskforge_scheduler'), ('taskforge_client'), ('taskforge_console')) r(rolname);
CREATE TEMP TABLE rels AS
SELECT c.oid, c.relname, c.relkind, c.relacl FROM pg_catalog.pg_class c
 WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S');

SELECT is_empty($$SELECT r.rolname, t.relname, p.priv FROM roles r, rels t,
                          unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(priv)
                   WHERE t.relkind IN ('r', 'p') AND pg_catalog.has_table_privilege(r.rolname, t.oid, p.priv)$$,
                'no role has SELECT/INSERT/UPDATE/DELETE/TRUNCATE/REFERENCES/TRIGGER on any table');
SELECT is_empty($$SELECT r.rolname, t.relname, p.priv FROM roles r, rels t, unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) p(priv)
                   WHERE t.relkind IN ('r', 'p') AND pg_catalog.has_any_column_privilege(r.rolname, t.oid, p.priv)$$,
                'no role has a column privilege on any table');
SELECT is_empty($$SELECT r.rolname, t.relname, p.priv FROM roles r, rels t, unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) p(priv)
                   WHERE t.relkind = 'S' AND pg_catalog.has_sequence_privilege(r.rolname, t.oid, p.priv)$$,
                'no role has any privilege on a sequence');
SELECT is_empty($$SELECT r.rolname, t.relname, p.priv FROM roles r, rels t,
                          unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(priv)
                   WHERE t.relkind = 'v' AND pg_catalog.has_table_privilege(r.rolname, t.oid, p.priv)$$,
                'no role may write to a view');
SELECT is_empty($$SELECT t.relname FROM rels t WHERE t.relkind = 'v' AND NOT pg_catalog.has_table_privilege('taskforge_client', t.oid, 'SELECT')$$,
                'taskforge_client may SELECT every view');
SELECT is_empty($$SELECT t.relname FROM rels t WHERE t.relkind = 'v' AND NOT pg_catalog.has_table_privilege('taskforge_console', t.oid, 'SELECT')$$,
                'taskforge_console may SELECT every view');
SELECT is_empty($$SELECT r.rolname, t.relname FROM roles r, rels t
                   WHERE r.rolname IN ('taskforge_worker', 'taskforge_scheduler') AND t.relkind = 'v'
                     AND pg_catalog.has_table_privilege(r.rolname, t.oid, 'SELECT')$$,
                'taskforge_worker and taskforge_scheduler may not SELECT any view');
SELECT is_empty($$SELECT t.relname, a.privilege_type FROM rels t, aclexplode(coalesce(t.relacl, acldefault((CASE WHEN t.relkind = 'S' THEN 's' ELSE 'r' END)::"char", 'taskforge_owner'::regrole::oid))) a
                   WHERE a.grantee = 0$$,
                'PUBLIC has no privilege on any table, view or sequence');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
