-- Name formats of the stored names, from their one home, taskforge._tf_name_pattern (which is
-- why these CHECKs are added here, after the functions, and not in 20_tables.sql). The pattern
-- is folded to a constant when the constraint expression is planned.
ALTER TABLE taskforge.task_types
    ADD CONSTRAINT task_types_name_format CHECK (task_type ~ taskforge._tf_name_pattern('task_type'));
ALTER TABLE taskforge.tasks
    ADD CONSTRAINT tasks_queue_format CHECK (queue ~ taskforge._tf_name_pattern('queue'));
ALTER TABLE taskforge.queues
    ADD CONSTRAINT queues_name_format CHECK (queue ~ taskforge._tf_name_pattern('queue'));
ALTER TABLE taskforge.periodic_schedules
    ADD CONSTRAINT periodic_schedules_name_format CHECK (name ~ taskforge._tf_name_pattern('schedule')),
    ADD CONSTRAINT periodic_schedules_queue_format CHECK (queue ~ taskforge._tf_name_pattern('queue'));
