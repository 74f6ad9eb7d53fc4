-- Name formats of the stored names, from their one home, taskforge._tf_name_pattern (which is
-- why these CHECKs, and the constraint of the domain taskforge.queue_name that every queue
-- column has, are added here, after the functions, and not in 15_domains.sql or 20_tables.sql).
--
-- Each CHECK is written with the pattern as a literal, taken from _tf_name_pattern when the
-- schema is built: a CHECK that called the function would run it (a SQL function call, about
-- 15 us) each time an UPDATE or INSERT statement is planned for execution, which is every claim
-- and every finalize (measured: 25 % of a worker turn).
DO $names$
DECLARE
    v_queue text := taskforge._tf_name_pattern('queue');
BEGIN
    EXECUTE format('ALTER TABLE taskforge.task_types ADD CONSTRAINT task_types_name_format CHECK (task_type ~ %L)',
                   taskforge._tf_name_pattern('task_type'));
    EXECUTE format('ALTER DOMAIN taskforge.queue_name ADD CONSTRAINT queue_name_format CHECK (VALUE ~ %L)', v_queue);
    EXECUTE format('ALTER TABLE taskforge.periodic_schedules'
                   ' ADD CONSTRAINT periodic_schedules_name_format CHECK (name ~ %L)',
                   taskforge._tf_name_pattern('schedule'));
END
$names$;

-- The trace context format (tasks.traceparent). A domain's constraint is prepared once per session
-- (type cache), so it may call its home, taskforge._tf_traceparent_ok, an inlined SQL expression;
-- it is checked only where a statement writes the column (tf_submit's INSERT).
ALTER DOMAIN taskforge.traceparent ADD CONSTRAINT traceparent_format CHECK (taskforge._tf_traceparent_ok(VALUE));
