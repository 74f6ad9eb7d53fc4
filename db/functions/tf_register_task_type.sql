-- taskforge.tf_register_task_type(task_type text, backoff_base_seconds double precision DEFAULT 2,
--     backoff_cap_seconds double precision DEFAULT 300, backoff_jitter double precision DEFAULT 0.2,
--     description text DEFAULT NULL, timeout_seconds double precision DEFAULT NULL) -> void
--
-- Purpose:    allow a task type (tf_submit rejects unknown types) or update its retry policy
--             and attempt timeout. The backoff policy applies to retryable failures finalized
--             after the change; the timeout to tasks submitted after it (each task keeps the
--             timeout it was submitted with).
-- Parameters: task_type             ^[a-z][a-z0-9_.-]{0,62}$
--             backoff_base_seconds  0..86400 seconds   backoff_cap_seconds  0..86400 seconds
--             backoff_jitter        0..1               description          free text or NULL
--                                                       (NULL keeps the current description)
--             timeout_seconds       0 < s <= 604800 (7 days): each attempt's deadline from its
--                                   claim; no lease is granted past it, and recovery records
--                                   the attempt timed_out (retried under the task's budget).
--                                   NULL = no deadline. Appended to the first version; like the
--                                   backoff settings, a call without it sets the default (NULL).
-- Returns:    nothing.
-- Errors:     TF400 naming the argument.
-- Locks:      the task_types row (INSERT ... ON CONFLICT DO UPDATE).
-- Clock:      clock_timestamp() for created_at/updated_at.
-- By hand:    yes, by the owner or a DBA; no TaskForge role may call it.
CREATE OR REPLACE FUNCTION taskforge.tf_register_task_type(
    task_type text,
    backoff_base_seconds double precision DEFAULT 2,
    backoff_cap_seconds double precision DEFAULT 300,
    backoff_jitter double precision DEFAULT 0.2,
    description text DEFAULT NULL,
    timeout_seconds double precision DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    PERFORM taskforge._tf_check_name('task_type', tf_register_task_type.task_type, 'task_type');
    PERFORM taskforge._tf_check_seconds('backoff_base_seconds', tf_register_task_type.backoff_base_seconds, 0, 86400);
    PERFORM taskforge._tf_check_seconds('backoff_cap_seconds', tf_register_task_type.backoff_cap_seconds, 0, 86400);
    IF tf_register_task_type.backoff_jitter IS NULL OR tf_register_task_type.backoff_jitter = 'NaN'::float8
       OR tf_register_task_type.backoff_jitter < 0 OR tf_register_task_type.backoff_jitter > 1 THEN
        PERFORM taskforge._tf_invalid('backoff_jitter', format('must be between 0 and 1, got %s',
            coalesce(tf_register_task_type.backoff_jitter::text, 'NULL')));
    END IF;
    IF tf_register_task_type.timeout_seconds IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('timeout_seconds', tf_register_task_type.timeout_seconds, 0, 604800, true);
    END IF;

    INSERT INTO taskforge.task_types AS tt
           (task_type, backoff_base_seconds, backoff_cap_seconds, backoff_jitter, description, timeout_seconds,
            created_at, updated_at)
    VALUES (tf_register_task_type.task_type, tf_register_task_type.backoff_base_seconds,
            tf_register_task_type.backoff_cap_seconds, tf_register_task_type.backoff_jitter,
            tf_register_task_type.description, tf_register_task_type.timeout_seconds, v_now, v_now)
    ON CONFLICT (task_type) DO UPDATE
       SET backoff_base_seconds = EXCLUDED.backoff_base_seconds,
           backoff_cap_seconds  = EXCLUDED.backoff_cap_seconds,
           backoff_jitter       = EXCLUDED.backoff_jitter,
           description          = coalesce(EXCLUDED.description, tt.description),
           timeout_seconds      = EXCLUDED.timeout_seconds,
           updated_at           = EXCLUDED.updated_at;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_register_task_type(text, double precision, double precision, double precision, text, double precision) IS
    'Owner/DBA only: allow a task type or update its retry backoff policy and attempt timeout (seconds; NULL = none). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_register_task_type(
    text, double precision, double precision, double precision, text, double precision
) FROM PUBLIC;
