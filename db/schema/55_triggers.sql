-- Row triggers, after the functions they call. One only: the finished notification of tasks
-- submitted with notify_finished (taskforge._tf_notify_finished, whose header says why this is
-- a trigger). The WHEN clause keeps every other task off it: for a row without the flag an
-- UPDATE pays the test of one boolean column and queues no trigger event (measured on the worker
-- turn: docs/benchmarks.md, "The hot path in SQL"). UPDATE OF state: statements that leave the
-- state alone (renewals, cancel requests) do not even test it.
CREATE TRIGGER tasks_notify_finished
    AFTER UPDATE OF state ON taskforge.tasks
    FOR EACH ROW
    WHEN (new.notify_finished)
    EXECUTE FUNCTION taskforge._tf_notify_finished();
