-- Catalog contract: the schema has three triggers, tasks_notify_finished (the finished notification of tasks submitted with notify_finished, taskforge._tf_notify_finished), tasks_release_children (the dependency rules of tasks that have children, taskforge._tf_release_children) and tasks_wake_ordering_key (the wake-up of an ordering key's next task, taskforge._tf_wake_ordering_key): each AFTER UPDATE OF state, per row, with a WHEN clause, so that no other statement and no row it does not concern calls it.
BEGIN;
SELECT plan(10);
SELECT set_eq($$SELECT c.relname::text || '.' || t.tgname::text FROM pg_catalog.pg_trigger t
                  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
                 WHERE c.relnamespace = 'taskforge'::regnamespace AND NOT t.tgisinternal$$,
              $$VALUES ('tasks.tasks_notify_finished'), ('tasks.tasks_release_children'), ('tasks.tasks_wake_ordering_key')$$,
              'the triggers of the schema are tasks_notify_finished, tasks_release_children and tasks_wake_ordering_key (foreign keys'' internal triggers aside)');
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
SELECT is((SELECT pg_catalog.pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_wake_ordering_key'),
    'CREATE TRIGGER tasks_wake_ordering_key AFTER UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (((new.ordering_key IS NOT NULL) AND (new.finished_at IS NOT NULL) AND (old.finished_at IS NULL))) EXECUTE FUNCTION taskforge._tf_wake_ordering_key()',
    'tasks_wake_ordering_key fires after an UPDATE of state, per row, only when a task with an ordering key ends');
SELECT is((SELECT tgenabled::text FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_wake_ordering_key'), 'O', 'tasks_wake_ordering_key is enabled');
SELECT is((SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_wake_ordering_key()'::regprocedure), false,
    '_tf_wake_ordering_key is a private helper, not SECURITY DEFINER');
SELECT * FROM finish();
ROLLBACK;
