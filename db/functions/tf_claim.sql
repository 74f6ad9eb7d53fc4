-- taskforge.tf_claim(worker_id uuid, queues text[] DEFAULT NULL, lease_seconds double precision DEFAULT 30,
--     max_tasks int DEFAULT 1, task_types text[] DEFAULT NULL)
--   -> TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
--            priority int, max_attempts int, lease_expires_at timestamptz)
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
--             max_tasks      1..1000.
-- Returns:    0..max_tasks rows in claim order; zero rows when nothing is eligible.
--             attempt_number is the new attempt's number: keep it with worker_id for renew
--             and finalize (together they are the fencing token).
-- Errors:     TF400 naming the argument (nothing claimed); TF404 unknown or deregistered worker.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen tasks rows (rows locked by other claimers
--             or by a finalize are skipped, never waited for); inserts attempt rows.
-- Plans:      SET plan_cache_mode = force_custom_plan: the LIMIT and the NULL-able filters come
--             from parameters, and a cached generic plan would stop using the partial claim
--             indexes well. Planning a custom plan costs less than one bad generic plan.
-- Clock:      clock_timestamp() once at entry: due test, lease start and attempt start.
-- By hand:    only as a registered worker that will renew or finalize what it takes; otherwise
--             the tasks wait for their leases to expire.
CREATE OR REPLACE FUNCTION taskforge.tf_claim(
    worker_id uuid,
    queues text[] DEFAULT NULL,
    lease_seconds double precision DEFAULT 30,
    max_tasks int DEFAULT 1,
    task_types text[] DEFAULT NULL)
RETURNS TABLE(task_id bigint, attempt_number int, task_type text, payload jsonb, queue text,
              priority int, max_attempts int, lease_expires_at timestamptz)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_lease timestamptz;
BEGIN
    IF tf_claim.worker_id IS NULL THEN
        PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');
    END IF;
    PERFORM taskforge._tf_check_names('queues', tf_claim.queues, 'queue');
    PERFORM taskforge._tf_check_names('task_types', tf_claim.task_types, 'task_type');
    PERFORM taskforge._tf_check_seconds('lease_seconds', tf_claim.lease_seconds, 0, 86400, true);
    PERFORM taskforge._tf_check_int('max_tasks', tf_claim.max_tasks, 1, 1000);
    IF NOT EXISTS (SELECT 1 FROM taskforge.workers w
                    WHERE w.worker_id = tf_claim.worker_id AND w.stopped_at IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TF404',
            MESSAGE = format('worker_id: no registered worker %s (unknown or deregistered)', tf_claim.worker_id),
            COLUMN = 'worker_id';
    END IF;
    v_lease := v_now + make_interval(secs => tf_claim.lease_seconds);

    RETURN QUERY
    WITH candidates AS (
        SELECT t.task_id
          FROM taskforge.tasks t
         WHERE t.state = 'QUEUED'
           AND t.scheduled_at <= v_now
           AND t.attempt_count < t.max_attempts
           AND (tf_claim.queues IS NULL OR t.queue = ANY (tf_claim.queues))
           AND (tf_claim.task_types IS NULL OR t.task_type = ANY (tf_claim.task_types))
         ORDER BY t.priority DESC, t.created_at, t.task_id
         LIMIT tf_claim.max_tasks
           FOR UPDATE OF t SKIP LOCKED
    ), claimed AS (
        UPDATE taskforge.tasks t
           SET state = 'RUNNING',
               owner_worker_id = tf_claim.worker_id,
               lease_expires_at = v_lease,
               attempt_count = t.attempt_count + 1,
               updated_at = v_now
          FROM candidates c
         WHERE t.task_id = c.task_id
        RETURNING t.task_id, t.attempt_count, t.task_type, t.payload, t.queue, t.priority,
                  t.max_attempts, t.created_at
    ), attempt_rows AS (
        INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, started_at, lease_expires_at)
        SELECT c.task_id, c.attempt_count, tf_claim.worker_id, 'RUNNING', v_now, v_lease
          FROM claimed c
    )
    SELECT c.task_id, c.attempt_count, c.task_type, c.payload, c.queue, c.priority, c.max_attempts, v_lease
      FROM claimed c
     ORDER BY c.priority DESC, c.created_at, c.task_id;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, int, text[]) IS
    'Claim up to max_tasks due QUEUED tasks (priority DESC, created_at, task_id; FOR UPDATE SKIP LOCKED): RUNNING + lease + new RUNNING attempt, atomically. Zero rows when nothing is eligible. Errors: TF400, TF404.';
REVOKE ALL ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, int, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_claim(uuid, text[], double precision, int, text[]) TO taskforge_worker;
