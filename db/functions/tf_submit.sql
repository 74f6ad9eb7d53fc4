-- taskforge.tf_submit(task_type text, payload jsonb DEFAULT '{}', queue text DEFAULT 'default',
--     priority int DEFAULT 0, max_attempts int DEFAULT 3, scheduled_at timestamptz DEFAULT NULL,
--     idempotency_key text DEFAULT NULL)
--   -> TABLE(task_id bigint, state text, created boolean)
--
-- Purpose:    admit one task. A committed task starts QUEUED with no attempts and becomes
--             eligible once scheduled_at (NULL = now) has passed.
-- Parameters: task_type        a registered type (tf_register_task_type).
--             payload          a JSON object, at most 1 MiB as JSON text.
--             queue            ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
--             priority         -32768..32767; higher is claimed first.
--             max_attempts     1..1000; total budget (first run, retries, crash replacements).
--             scheduled_at     earliest eligibility, finite timestamptz, or NULL for now.
--             idempotency_key  1..200 characters, or NULL.
-- Idempotency: the key is reserved by a partial unique index for as long as the task row
--             exists. The request fingerprint (taskforge._tf_fingerprint) covers task_type,
--             payload, queue, priority, max_attempts and scheduled_at (UTC; NULL stays NULL).
--             Same key, same fingerprint: the stored task is returned with created = false,
--             whatever its state now; nothing is created or reset. Same key, different
--             fingerprint: TF409. Concurrent submits with one key wait on the first inserter
--             (INSERT ... ON CONFLICT DO NOTHING) and all get its id; if that transaction rolls
--             back the key is free and the next submitter creates the task.
-- Returns:    one row: the task id, its current state, and whether this call created it.
-- Errors:     TF400 naming the argument (nothing written); TF409 key reused with a different
--             request. Under REPEATABLE READ or SERIALIZABLE a concurrent submit with the same
--             key can raise 40001 (serialization_failure): retry the transaction.
-- Locks:      inserts one tasks row; on a key conflict waits for the competing inserter.
-- Notify:     pg_notify('taskforge', queue) when the task is due now (delivered on commit).
-- Clock:      clock_timestamp() for created_at and the default schedule.
-- By hand:    yes; it is the public way to create work.
CREATE OR REPLACE FUNCTION taskforge.tf_submit(
    task_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority int DEFAULT 0,
    max_attempts int DEFAULT 3,
    scheduled_at timestamptz DEFAULT NULL,
    idempotency_key text DEFAULT NULL)
RETURNS TABLE(task_id bigint, state text, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c_max_payload_bytes constant int := 1048576;
    v_now timestamptz := clock_timestamp();
    v_fingerprint bytea;
    v_id bigint;
    v_state text;
    v_stored bytea;
BEGIN
    -- Validation: every argument, before anything is written.
    IF tf_submit.task_type IS NULL THEN
        PERFORM taskforge._tf_invalid('task_type', 'must not be NULL');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM taskforge.task_types tt WHERE tt.task_type = tf_submit.task_type) THEN
        PERFORM taskforge._tf_invalid('task_type', format('unknown task type %s (register it with tf_register_task_type)',
            quote_literal(left(tf_submit.task_type, 100))));
    END IF;
    IF tf_submit.payload IS NULL OR jsonb_typeof(tf_submit.payload) <> 'object' THEN
        PERFORM taskforge._tf_invalid('payload', format('must be a JSON object, got %s',
            coalesce(jsonb_typeof(tf_submit.payload), 'NULL')));
    END IF;
    IF octet_length(tf_submit.payload::text) > c_max_payload_bytes THEN
        PERFORM taskforge._tf_invalid('payload', format('must be at most %s bytes as JSON text, got %s',
            c_max_payload_bytes, octet_length(tf_submit.payload::text)));
    END IF;
    IF tf_submit.queue IS NULL OR tf_submit.queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$' THEN
        PERFORM taskforge._tf_invalid('queue', format('must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$, got %s',
            coalesce(quote_literal(left(tf_submit.queue, 100)), 'NULL')));
    END IF;
    PERFORM taskforge._tf_check_int('priority', tf_submit.priority, -32768, 32767);
    PERFORM taskforge._tf_check_int('max_attempts', tf_submit.max_attempts, 1, 1000);
    IF tf_submit.scheduled_at IN ('infinity'::timestamptz, '-infinity'::timestamptz) THEN
        PERFORM taskforge._tf_invalid('scheduled_at', 'must be a finite timestamp or NULL');
    END IF;
    IF tf_submit.idempotency_key IS NOT NULL AND length(tf_submit.idempotency_key) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid('idempotency_key', format('must be 1 to 200 characters, got %s',
            length(tf_submit.idempotency_key)));
    END IF;

    IF tf_submit.idempotency_key IS NOT NULL THEN
        v_fingerprint := taskforge._tf_fingerprint(tf_submit.task_type, tf_submit.payload, tf_submit.queue,
            tf_submit.priority, tf_submit.max_attempts, tf_submit.scheduled_at);
    END IF;

    LOOP
        INSERT INTO taskforge.tasks AS t
               (task_type, payload, queue, priority, max_attempts, state, scheduled_at,
                idempotency_key, fingerprint, created_at, updated_at)
        VALUES (tf_submit.task_type, tf_submit.payload, tf_submit.queue, tf_submit.priority,
                tf_submit.max_attempts, 'QUEUED', coalesce(tf_submit.scheduled_at, v_now),
                tf_submit.idempotency_key, v_fingerprint, v_now, v_now)
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING t.task_id INTO v_id;

        IF v_id IS NOT NULL THEN
            IF coalesce(tf_submit.scheduled_at, v_now) <= v_now THEN
                PERFORM taskforge._tf_notify_queues(ARRAY[tf_submit.queue]);
            END IF;
            RETURN QUERY SELECT v_id, 'QUEUED'::text, true;
            RETURN;
        END IF;

        -- The key is taken by a committed task: a replay or a conflict.
        SELECT t.task_id, t.state, t.fingerprint INTO v_id, v_state, v_stored
          FROM taskforge.tasks t
         WHERE t.idempotency_key = tf_submit.idempotency_key;
        IF FOUND THEN
            IF v_stored IS DISTINCT FROM v_fingerprint THEN
                RAISE EXCEPTION USING ERRCODE = 'TF409',
                    MESSAGE = format('idempotency_key: %s is already used by task %s with a different request',
                        quote_literal(left(tf_submit.idempotency_key, 100)), v_id),
                    COLUMN = 'idempotency_key',
                    HINT = 'Reuse a key only for exactly the same task_type, payload, queue, priority, max_attempts and scheduled_at.';
            END IF;
            RETURN QUERY SELECT v_id, v_state, false;
            RETURN;
        END IF;
        -- The holder was deleted (tf_prune) between our insert and our read: try again.
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_submit(text, jsonb, text, int, int, timestamptz, text) IS
    'Admit a task (QUEUED, no attempts). Idempotency key + SHA-256 request fingerprint: replay returns the stored task with created=false; a different request is TF409. NOTIFY taskforge(queue) when due now. Errors: TF400, TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_submit(text, jsonb, text, int, int, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_submit(text, jsonb, text, int, int, timestamptz, text) TO taskforge_client;
