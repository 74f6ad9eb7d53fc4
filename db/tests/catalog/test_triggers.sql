-- Catalog contract: the schema has two triggers, tasks_notify_finished (the finished notification of tasks submitted with notify_finished, taskforge._tf_notify_finished) and tasks_release_children (the dependency rules of tasks that have children, taskforge._tf_release_children): each AFTER UPDATE OF state, per row, WHEN (NEW.<flag>), so that no other statement and no unflagged row calls it.
BEGIN;
SELECT plan(7);
SELECT set_eq($$SELECT c.relname::text || '.' || t.tgname::text FROM pg_catalog.pg_trigger t
                  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
                 WHERE c.relnamespace = 'taskforge'::regnamespace AND NOT t.tgisinternal$$,
              $$VALUES ('tasks.tasks_notify_finished'), ('tasks.tasks_release_children')$$,
              'the triggers of the schema are tasks_notify_finished and tasks_release_children (foreign keys'' internal triggers aside)');
SELECT is((SELECT pg_catalog.pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_notify_finished'),
    'CREATE TRIGGER tasks_notify_finished AFTER UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (new.notify_finished) EXECUTE FUNCTION taskforge._tf_notify_finished()',
    'tasks_notify_finished fires after an UPDATE of state, per row, only when the row has notify_finished');
SELECT is((SELECT pg_catalog.pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_release_children'),
    'CREATE TRIGGER tasks_release_children AFTER UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (new.has_children) EXECUTE FUNCTION taskforge._tf_release_children()',
    'tasks_release_children fires after an UPDATE of state, per row, only when the row has children');
SELECT is((SELECT tgenabled::text FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_notify_finished'), 'O', 'tasks_notify_finished is enabled');
SELECT is((SELECT tgenabled::text FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_release_children'), 'O', 'tasks_release_children is enabled');
SELECT is((SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_notify_finished()'::regprocedure), false,
    '_tf_notify_finished is a private helper, not SECURITY DEFINER');
SELECT is((SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_release_children()'::regprocedure), false,
    '_tf_release_children is a private helper, not SECURITY DEFINER');
SELECT * FROM finish();
ROLLBACK;
