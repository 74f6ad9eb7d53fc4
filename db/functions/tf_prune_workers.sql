-- taskforge.tf_prune_workers(older_than_seconds double precision, max_rows numeric DEFAULT 10000)
--   -> TABLE(workers int, schedulers int)
--
-- Purpose:    retention of process records. tf_register_worker adds a workers row per worker
--             process start and tf_scheduler_heartbeat a schedulers row per scheduler process
--             start; this deletes the rows of processes that are gone and were last heard of
--             more than older_than_seconds ago (stopped_at, else last_heartbeat_at):
--               a worker whose liveness in tf_workers is stopped (deregistered) or stale (no
--               heartbeat for more than three of its intervals), that no attempt names and
--               that owns no RUNNING task. Attempts keep their worker's row until tf_prune
--               deletes them with their task, so run tf_prune first;
--               a scheduler whose liveness in tf_schedulers is stopped or stale.
--             The liveness rule is the views' own (this function reads them): a live process
--             is never deleted, whatever older_than_seconds. Oldest first, at most max_rows
--             workers and at most max_rows schedulers per call; call again while either count
--             is max_rows (the scheduler does, after tf_prune, with --retain-days).
-- Parameters: older_than_seconds  0..3153600000 seconds (100 years).
--             max_rows            whole number 1..100000, the batch size of each table.
-- Returns:    one row: workers = worker rows deleted; schedulers = scheduler rows deleted.
-- Errors:     TF400 naming the argument; nothing is deleted then.
-- Locks:      FOR UPDATE SKIP LOCKED on the chosen workers and schedulers rows: a row being
--             heartbeated or deregistered right now, or held by a claim in progress (the
--             foreign-key lock of its new attempt), is skipped and looked at on the next call.
--             The locked workers are checked for attempts and owned tasks again in a statement
--             of its own (a fresh snapshot), so an attempt committed after the candidates were
--             chosen keeps its worker. A claim by a deleted worker that started before the
--             delete committed fails with 23503 (foreign key) instead of TF404; only a worker
--             silent for longer than older_than_seconds can be in that position.
-- Plans:      SET plan_cache_mode = force_custom_plan (LIMIT from a parameter). workers and
--             schedulers are read in full: there is no index on their heartbeat columns, so
--             that every heartbeat stays a HOT update. Whether attempts or a task name a
--             worker can be looked up in attempts_worker_idx and tasks_owner_idx.
-- Clock:      clock_timestamp() at entry for the cutoff; liveness is the views' (now(), the
--             start of the caller's transaction: inside a long transaction a process has to
--             have been stale at its start, which deletes less, never more).
-- By hand:    yes; what it deletes is gone. A process whose row was deleted is unknown from
--             then on: a worker that comes back gets TF404 from its next heartbeat or claim
--             (the Python worker then stops), a scheduler's next beat records a new start.
CREATE OR REPLACE FUNCTION taskforge.tf_prune_workers(
    older_than_seconds double precision, max_rows numeric DEFAULT 10000)
RETURNS TABLE(workers int, schedulers int)
LANGUAGE plpgsql
ROWS 1
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_limit int;
    v_locked uuid[];
    v_workers int;
    v_schedulers int;
BEGIN
    PERFORM taskforge._tf_check_seconds('older_than_seconds', tf_prune_workers.older_than_seconds, 0, 3153600000);
    PERFORM taskforge._tf_check_int('max_rows', tf_prune_workers.max_rows, 1, 100000);
    v_cutoff := v_now - make_interval(secs => tf_prune_workers.older_than_seconds);
    v_limit := tf_prune_workers.max_rows;

    -- Workers: choose and lock the candidates, oldest first (FOR UPDATE OF the view locks its
    -- workers rows) ...
    SELECT array_agg(c.worker_id) INTO v_locked
      FROM (SELECT v.worker_id
              FROM taskforge.tf_workers v
             WHERE v.liveness <> 'alive'
               AND coalesce(v.stopped_at, v.last_heartbeat_at) < v_cutoff
               AND NOT EXISTS (SELECT 1 FROM taskforge.attempts a WHERE a.worker_id = v.worker_id)
               AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.owner_worker_id = v.worker_id)
             ORDER BY coalesce(v.stopped_at, v.last_heartbeat_at), v.worker_id
             LIMIT v_limit
               FOR UPDATE OF v SKIP LOCKED) c;
    -- ... then delete those that no attempt or task names in a snapshot taken under the locks
    -- (a claim that committed in between left an attempt; one not yet committed holds a lock
    -- that made us skip the row). Locked rows cannot change, so liveness needs no new look.
    DELETE FROM taskforge.workers w
     WHERE w.worker_id = ANY (v_locked)
       AND NOT EXISTS (SELECT 1 FROM taskforge.attempts a WHERE a.worker_id = w.worker_id)
       AND NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.owner_worker_id = w.worker_id);
    GET DIAGNOSTICS v_workers = ROW_COUNT;

    -- Schedulers: nothing refers to them.
    WITH victims AS (
        SELECT v.scheduler_id
          FROM taskforge.tf_schedulers v
         WHERE v.liveness <> 'alive'
           AND coalesce(v.stopped_at, v.last_heartbeat_at) < v_cutoff
         ORDER BY coalesce(v.stopped_at, v.last_heartbeat_at), v.scheduler_id
         LIMIT v_limit
           FOR UPDATE OF v SKIP LOCKED
    )
    DELETE FROM taskforge.schedulers s
     USING victims v
     WHERE s.scheduler_id = v.scheduler_id;
    GET DIAGNOSTICS v_schedulers = ROW_COUNT;

    RETURN QUERY SELECT v_workers, v_schedulers;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) IS
    'Retention of process records: delete workers and schedulers rows stopped or stale (tf_workers, tf_schedulers) and last heard of more than older_than_seconds ago (oldest first, at most max_rows of each); a worker that attempts name or that owns a RUNNING task stays. Returns (workers, schedulers) deleted. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_prune_workers(double precision, numeric) TO taskforge_scheduler;
