-- taskforge.tf_unschedule_periodic(name text) -> boolean
--
-- Purpose:    delete a periodic schedule: no tick of it is enqueued after this commits. Tasks
--             it already enqueued stay as they are (cancel them with tf_cancel).
--             Removing a schedule that does not exist is not an error: the answer is false,
--             so a deploy script can state "this schedule is gone" and run twice.
-- Parameters: name  taskforge._tf_name_pattern('schedule'): ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
-- Returns:    true when a schedule was deleted, false when there was none of that name.
-- Errors:     TF400 name NULL or not a schedule name.
-- Locks:      the schedule row (waits for a scheduler that is enqueueing it).
-- Clock:      none.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_unschedule_periodic(name text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM taskforge._tf_check_name('name', tf_unschedule_periodic.name, 'schedule');
    DELETE FROM taskforge.periodic_schedules s WHERE s.name = tf_unschedule_periodic.name;
    RETURN FOUND;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_unschedule_periodic(text) IS
    'Delete a periodic schedule; true when one was deleted, false when none had that name. Enqueued tasks stay. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_unschedule_periodic(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_unschedule_periodic(text) TO taskforge_client;
