-- taskforge._tf_name_pattern(kind text) -> text                        (private helper)
--
-- Purpose:    the one home of the name rules: the regular expression a queue name, a task
--             type name or a periodic schedule name must match. The table CHECKs (db/schema/50_name_rules.sql), every
--             validator (taskforge._tf_check_name, _tf_check_names, _tf_submit_one) and the
--             Python constants (taskforge.names, compared by a test) use it.
--               'queue'      ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$  (case-sensitive; ':' allowed)
--               'task_type'  ^[a-z][a-z0-9_.-]{0,62}$           (lower case, dotted namespaces)
--               'schedule'   ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$  (periodic schedules: as queues)
-- Parameters: kind  'queue' | 'task_type' | 'schedule'.
-- Returns:    the pattern (POSIX regular expression for ~), NULL for any other kind.
-- Errors:     none.  Locks: none.  Clock: none.  By hand: harmless.
-- Plans:      inlined and folded to a constant wherever it is called with a constant kind.
CREATE OR REPLACE FUNCTION taskforge._tf_name_pattern(kind text)
RETURNS text
LANGUAGE sql
IMMUTABLE
-- No SET clause: PostgreSQL inlines and folds it into the calling expression (CHECK
-- constraints and the validators) as the literal pattern.
AS $fn$
    SELECT CASE kind
        WHEN 'queue' THEN '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$'
        WHEN 'task_type' THEN '^[a-z][a-z0-9_.-]{0,62}$'
        WHEN 'schedule' THEN '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$'
    END
$fn$;

COMMENT ON FUNCTION taskforge._tf_name_pattern(text) IS
    'Private: the regular expression a queue (kind ''queue''), task type (kind ''task_type'') or periodic schedule (kind ''schedule'') name must match.';
REVOKE ALL ON FUNCTION taskforge._tf_name_pattern(text) FROM PUBLIC;
