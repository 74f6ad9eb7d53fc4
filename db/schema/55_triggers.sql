-- Row triggers, after the functions they call. Three: the finished notification of tasks
-- submitted with notify_finished (taskforge._tf_notify_finished, whose header says why this is
-- a trigger), the dependency rules of tasks that have children
-- (taskforge._tf_release_children), and the wake-up of an ordering key's next task
-- (taskforge._tf_wake_ordering_key). The WHEN clause keeps every other task off it: for a row without the flag an
-- UPDATE pays the test of one boolean column and queues no trigger event (measured on the worker
-- turn: docs/benchmarks.md, "The hot path in SQL"). UPDATE OF state: statements that leave the
-- state alone (renewals, cancel requests) do not even test it.
CREATE TRIGGER tasks_notify_finished
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.notify_finished)
    EXECUTE FUNCTION taskforge._tf_notify_finished();
-- The same pattern for dependencies: only a task that has children (has_children, set when a
-- child is submitted) calls the rules; every other row pays the test of one boolean column.
CREATE TRIGGER tasks_release_children
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.has_children)
    EXECUTE FUNCTION taskforge._tf_release_children();
-- And for ordering keys: only the end of a task that has one (finished_at set by this update).
CREATE TRIGGER tasks_wake_ordering_key
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.ordering_key IS NOT NULL AND new.finished_at IS NOT NULL AND old.finished_at IS NULL)
    EXECUTE FUNCTION taskforge._tf_wake_ordering_key();
