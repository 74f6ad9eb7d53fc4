-- Catalog contract: the schema has one trigger, tasks_notify_finished (the finished notification of tasks submitted with notify_finished, taskforge._tf_notify_finished): AFTER UPDATE OF state, per row, WHEN (NEW.notify_finished), so that no other statement and no unflagged row calls it.
BEGIN;
SELECT plan(4);
SELECT set_eq($$SELECT c.relname::text || '.' || t.tgname::text FROM pg_catalog.pg_trigger t
                  JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
                 WHERE c.relnamespace = 'taskforge'::regnamespace AND NOT t.tgisinternal$$,
              $$VALUES ('tasks.tasks_notify_finished')$$,
              'the only trigger of the schema is tasks_notify_finished (foreign keys'' internal triggers aside)');
SELECT is((SELECT pg_catalog.pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_notify_finished'),
    'CREATE TRIGGER tasks_notify_finished AFTER UPDATE OF state ON taskforge.tasks FOR EACH ROW WHEN (new.notify_finished) EXECUTE FUNCTION taskforge._tf_notify_finished()',
    'it fires after an UPDATE of state, per row, only when the row has notify_finished');
SELECT is((SELECT tgenabled::text FROM pg_catalog.pg_trigger
            WHERE tgrelid = 'taskforge.tasks'::regclass AND tgname = 'tasks_notify_finished'), 'O', 'it is enabled');
SELECT is((SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'taskforge._tf_notify_finished()'::regprocedure), false,
    'its function is a private helper, not SECURITY DEFINER');
SELECT * FROM finish();
ROLLBACK;
