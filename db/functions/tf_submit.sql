-- taskforge.tf_submit(task_type text, payload jsonb DEFAULT '{}', queue text DEFAULT 'default',
--     priority numeric DEFAULT 0, max_attempts numeric DEFAULT 3, scheduled_at timestamptz DEFAULT NULL,
--     idempotency_key text DEFAULT NULL, timeout_seconds double precision DEFAULT NULL,
--     delay_seconds double precision DEFAULT NULL, notify_finished boolean DEFAULT false,
--     traceparent text DEFAULT NULL, depends_on bigint[] DEFAULT NULL, rate_key text DEFAULT NULL,
--     concurrency_key text DEFAULT NULL, ordering_key text DEFAULT NULL)
--   -> TABLE(task_id bigint, state text, created boolean)
--
-- Purpose:    admit one task. A committed task starts QUEUED with no attempts and becomes
--             eligible once scheduled_at (NULL = now, or now + delay_seconds) has passed; with
--             depends_on it starts BLOCKED until its parents SUCCEEDED (below).
-- Parameters: task_type        a registered type (tf_register_task_type).
--             payload          a JSON object, at most 1 MiB as JSON text and nested at most
--                              100 levels deep (objects and arrays; the payload object is level
--                              1, so {"a": [1]} is 2 deep). Deeper documents are refused because
--                              clients decode payloads recursively (Python's json stops near
--                              1000 levels). The argument is parsed as jsonb before the function
--                              runs: malformed JSON is 22P02, text with a NUL (\u0000) is 22P05,
--                              and a document nested beyond what max_stack_depth allows (some
--                              10,000 levels with the default 2 MB) is 54001; no body can
--                              turn those into TF400.
--             queue            ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$
--             priority         whole number -32768..32767; higher is claimed first.
--             max_attempts     whole number 1..1000; total budget (first run, retries, crash
--                              replacements). Both are numeric, not int, so that any number
--                              reaches the check (3000000000 is TF400, not 42883 "function does
--                              not exist"); every call shape of the int version still resolves.
--             scheduled_at     earliest eligibility, finite timestamptz, or NULL for now (or
--                              for now + delay_seconds).
--             idempotency_key  1..200 characters, or NULL.
--             timeout_seconds  (appended later) this task's attempt timeout, 0 < s <= 604800
--                              (7 days), overriding its type's (tf_register_task_type); NULL:
--                              the type's, as it is at submit. Each attempt's deadline is its
--                              claim time + this (see tf_claim, tf_renew).
--             The last three were appended together (every earlier call shape, positional or
--             named, still resolves):
--             delay_seconds    earliest eligibility as a delay from now: finite, 0 <= s <=
--                              3155760000 (100 years of 365.25 days), or NULL for none.
--                              scheduled_at becomes clock_timestamp() + delay at entry (the
--                              database's clock, never the caller's). Give at most one of
--                              scheduled_at and delay_seconds: both is TF400 delay_seconds.
--             notify_finished  true: when the task reaches SUCCEEDED, FAILED or CANCELLED, by
--                              any path (finalize, recovery of an expired lease or a passed
--                              deadline, cancel), that transaction sends
--                              pg_notify('taskforge_finished', task_id::text), delivered on
--                              commit (the trigger function taskforge._tf_notify_finished).
--                              false (the default): nothing is sent. NULL is TF400. Such a
--                              notification serialises the committing transaction with other
--                              NOTIFYing commits, so only tasks someone waits for should ask.
--             traceparent      the W3C trace context of the submitter, NULL or
--                              ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$ with the version
--                              not 'ff' and neither id all zeros (taskforge._tf_traceparent_ok);
--                              stored and returned as the last column of every claim of the
--                              task (tf_claim, tf_finalize_and_claim), so a worker can link its
--                              attempt's span to it.
--             The last four were appended together (issue 18; docs/workflows.md and
--             docs/flow-control.md):
--             depends_on       parent task ids: NULL or empty for none, else at most 1000
--                              existing tasks (duplicates count once; a NULL element is TF400,
--                              a missing task TF404 COLUMN 'depends_on'). The task starts
--                              BLOCKED while a parent is not SUCCEEDED and becomes QUEUED in the
--                              transaction of its last parent's success; when a parent ends
--                              FAILED or CANCELLED (or already has), it ends CANCELLED with
--                              cancel_reason 'dependency_failed' and no attempt, and so do its
--                              own BLOCKED descendants. Only existing tasks can be parents, so
--                              no cycle can be formed.
--             rate_key         a key of 1..200 characters or NULL: the task starts only with a
--                              token of its key's bucket (tf_set_rate_limit; a key without one
--                              is unlimited).
--             concurrency_key  1..200 characters or NULL: at most the key's max_running
--                              (tf_set_concurrency_limit; none: unlimited) of its tasks RUNNING
--                              at once, and claims rotate across keys (fair claiming).
--             ordering_key     1..200 characters or NULL: the key's tasks run one at a time in
--                              task id order (the order their submits commit in: each submit
--                              locks the key's row); the next starts once the previous is
--                              terminal, and the whole key waits while one is RETRYING.
-- Idempotency: the key is reserved by a partial unique index for as long as the task row
--             exists. The request fingerprint (taskforge._tf_fingerprint) covers task_type,
--             payload, queue, priority, max_attempts and scheduled_at (UTC; NULL stays NULL),
--             timeout_seconds when one is given, depends_on and the three keys when given,
--             and delay_seconds when one is given, as given
--             (not the instant it yields): replaying a delayed submit, later, with the same key
--             returns the stored task (created = false, its scheduled_at from the first call)
--             instead of TF409. notify_finished and traceparent are not part of it: a replay
--             that differs only in them returns the stored task, and the first submit's values
--             stand.
--             Same key, same fingerprint: the stored task is returned with created = false,
--             whatever its state now; nothing is created or reset. Same key, different
--             fingerprint: TF409. Concurrent submits with one key wait on the first inserter
--             (INSERT ... ON CONFLICT DO NOTHING) and all get its id; if that transaction rolls
--             back the key is free and the next submitter creates the task.
-- Returns:    one row: the task id, its current state, and whether this call created it.
-- Errors:     TF400 naming the argument (nothing written): MESSAGE '<argument>: <problem>',
--             COLUMN '<argument>'; TF409 key reused with a different request, COLUMN
--             'idempotency_key' (docs/sql-api.md#errors). Under REPEATABLE READ or SERIALIZABLE a concurrent submit with the same
--             key can raise 40001 (serialization_failure): retry the transaction.
-- Locks:      inserts one tasks row (with a key, one taskforge.idempotency_keys row first); on a
--             key conflict waits for the competing inserter; the
--             parents' rows (depends_on) and the ordering key's row until commit.
-- Notify:     pg_notify('taskforge', queue) when the task is due now (delivered on commit);
--             with notify_finished, later, pg_notify('taskforge_finished', task_id) when it ends.
-- Clock:      clock_timestamp() once at entry: created_at, the default schedule and the base of
--             delay_seconds.
-- By hand:    yes; it is the public way to create work.
-- Shares:     its per-request core with tf_submit_many (taskforge._tf_submit_one).
CREATE OR REPLACE FUNCTION taskforge.tf_submit(
    task_type text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority numeric DEFAULT 0,
    max_attempts numeric DEFAULT 3,
    scheduled_at timestamptz DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    timeout_seconds double precision DEFAULT NULL,
    delay_seconds double precision DEFAULT NULL,
    notify_finished boolean DEFAULT false,
    traceparent text DEFAULT NULL,
    depends_on bigint[] DEFAULT NULL,
    rate_key text DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    ordering_key text DEFAULT NULL)
RETURNS TABLE(task_id bigint, state text, created boolean)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz := clock_timestamp();
    r record;
BEGIN
    -- Validation, key reservation, fingerprint, replay and TF409: the shared per-request core.
    SELECT * INTO r
      FROM taskforge._tf_submit_one(tf_submit.task_type, tf_submit.payload, tf_submit.queue, tf_submit.priority,
                                    tf_submit.max_attempts, tf_submit.scheduled_at, tf_submit.idempotency_key,
                                    v_now, '', timeout_seconds => tf_submit.timeout_seconds,
                                    delay_seconds => tf_submit.delay_seconds,
                                    notify_finished => tf_submit.notify_finished,
                                    traceparent => tf_submit.traceparent, depends_on => tf_submit.depends_on,
                                    rate_key => tf_submit.rate_key, concurrency_key => tf_submit.concurrency_key,
                                    ordering_key => tf_submit.ordering_key);
    IF r.due_now THEN
        PERFORM taskforge._tf_notify_queues(ARRAY[tf_submit.queue]);
    END IF;
    RETURN QUERY SELECT r.task_id, r.state, r.created;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_submit(text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text, bigint[], text, text, text) IS
    'Admit a task (QUEUED, no attempts), due at scheduled_at or after delay_seconds (database clock). Idempotency key + SHA-256 request fingerprint (the delay as given; not notify_finished or traceparent): replay returns the stored task with created=false; a different request is TF409. NOTIFY taskforge(queue) when due now; with notify_finished, NOTIFY taskforge_finished(task_id) when it ends. traceparent is returned by its claims. depends_on: BLOCKED until every parent SUCCEEDED (CANCELLED dependency_failed if one fails); rate_key, concurrency_key, ordering_key: flow control. Errors: TF400, TF404 (depends_on), TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_submit(
    text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text,
    bigint[], text, text, text
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_submit(
    text, jsonb, text, numeric, numeric, timestamptz, text, double precision, double precision, boolean, text,
    bigint[], text, text, text
) TO taskforge_client;
