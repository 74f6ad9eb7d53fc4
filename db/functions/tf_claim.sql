-- taskforge.tf_claim(worker_id uuid, queues text[] DEFAULT NULL, lease_seconds double precision DEFAULT 30,
--     max_tasks numeric DEFAULT 1, task_types text[] DEFAULT NULL)
--   -> TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
--            priority int, max_attempts int, lease_expires_at timestamptz,
--            timeout_seconds double precision, traceparent text)
--
-- Purpose:    take up to max_tasks due QUEUED tasks for one worker. For each claimed task, in one
--             short transaction: state RUNNING, owner, lease, attempt number + 1 and the RUNNING
--             attempt row. Candidates: state QUEUED, scheduled_at <= now, attempts remaining,
--             in one of queues (NULL = any) and of one of task_types (NULL = any), taken in the
--             order priority DESC, created_at, task_id. Priority chooses candidates; it is not
--             strict FIFO or fairness: a locked higher-priority task is skipped, not waited for.
-- Parameters: worker_id      a registered, not deregistered worker.
--             queues         text[] of queue names, or NULL for any queue.
--             task_types     text[] of task type names, or NULL for any type.
--                            (An empty array matches nothing; a NULL or malformed element is TF400.)
--             lease_seconds  0 < s <= 86400 seconds: the lease granted from now.
--             max_tasks      whole number 1..1000 (numeric: any number reaches the check).
-- Returns:    0..max_tasks rows in claim order; zero rows when nothing is eligible.
--             attempt_number is the new attempt's number: keep it with worker_id for renew
--             and finalize (together they are the fencing token). timeout_seconds (appended
--             to the first version) is the attempt's time limit from now, NULL for none: no
--             lease is granted past it, and recovery then records the attempt timed_out.
--             traceparent (appended last) is the W3C trace context given to tf_submit, or NULL:
--             the parent of the span a worker runs the attempt in.
-- Errors:     TF400 naming the argument (nothing claimed); TF404 unknown or deregistered worker.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen tasks rows (rows locked by other claimers
--             or by a finalize are skipped, never waited for); inserts attempt rows.
-- Plans:      one cached generic plan per filter shape, re-planned only while delayed tasks
--             exist (taskforge._tf_claim_pick, which chooses and locks the tasks, explains why);
--             the writes are taskforge._tf_turn's one statement, the path tf_finalize_and_claim
--             takes too.
-- Clock:      clock_timestamp() once at entry: due test, lease start and attempt start.
-- By hand:    only as a registered worker that will renew or finalize what it takes; otherwise
--             the tasks wait for their leases to expire.
CREATE OR REPLACE FUNCTION taskforge.tf_claim(
    worker_id uuid,
    queues text[] DEFAULT NULL,
    lease_seconds double precision DEFAULT 30,
    max_tasks numeric DEFAULT 1,
    task_types text[] DEFAULT NULL)
RETURNS TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
              priority int, max_attempts int, lease_expires_at timestamptz,
              timeout_seconds double precision, traceparent text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_now timestamptz;
BEGIN
    IF tf_claim.max_tasks IS NULL OR tf_claim.max_tasks NOT BETWEEN 1 AND 1000
       OR tf_claim.max_tasks <> trunc(tf_claim.max_tasks) THEN
        PERFORM taskforge._tf_check_int('max_tasks', tf_claim.max_tasks, 1, 1000);
    END IF;
    v_now := clock_timestamp();
    RETURN QUERY
    SELECT c.task_id, c.attempt_number, c.task_type, c.payload, c.queue, c.priority, c.max_attempts,
           c.lease_expires_at, c.timeout_seconds, c.traceparent
      FROM taskforge._tf_turn(tf_claim.worker_id, '{}', '{}', '{}', NULL, NULL,
                              taskforge._tf_claim_pick(tf_claim.worker_id, tf_claim.queues, tf_claim.lease_seconds,
                                                       tf_claim.max_tasks::int, tf_claim.task_types, v_now),
                              tf_claim.lease_seconds, v_now) AS c;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) IS
    'Claim up to max_tasks due QUEUED tasks (priority DESC, created_at, task_id; FOR UPDATE SKIP LOCKED): RUNNING + lease + new RUNNING attempt, atomically. Zero rows when nothing is eligible. Rows end with timeout_seconds and traceparent (the submitter''s trace context). Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, numeric, text[]) TO taskforge_worker;
