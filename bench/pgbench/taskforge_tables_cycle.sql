-- Ceilings (d) and (d-batch), one cycle: the rows tf_finalize_and_claim writes, on TaskForge's
-- own tables (every index, CHECK constraint, domain and foreign key), written by ONE plain
-- statement instead of the function: no validation, no guard, no worker probe, no PL/pgSQL.
-- It ends the :task_ids this client claimed in its previous cycle (task SUCCEEDED, its RUNNING
-- attempt SUCCEEDED) and claims the next :batch in claim order (task RUNNING under this client's
-- worker with a 30 s lease, a new RUNNING attempt row): the floor of any function that keeps
-- these tables' guarantees and writes what TaskForge writes. Only for measuring: it skips the
-- guard, so never run it beside real workers. `taskforge bench ceiling` starts every client with
-- -D task_ids={} and -D batch=1 (d) or B (d-batch); pgbench keeps a client's variables across
-- cycles, so a client's first cycle only claims.
WITH done AS (
    UPDATE taskforge.tasks t
       SET state = 'SUCCEEDED', owner_worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL,
           finished_at = now(), updated_at = now()
     WHERE t.task_id = ANY (:task_ids::bigint[])
), ended AS (
    UPDATE taskforge.attempts a
       SET state = 'SUCCEEDED', outcome = 'succeeded', finished_at = now()
     WHERE a.task_id = ANY (:task_ids::bigint[]) AND a.state = 'RUNNING'
), claimed AS (
    UPDATE taskforge.tasks t
       SET state = 'RUNNING', owner_worker_id = w.worker_id,
           lease_expires_at = least(now() + interval '30 seconds', now() + make_interval(secs => t.timeout_seconds)),
           deadline_at = now() + make_interval(secs => t.timeout_seconds),
           attempt_count = t.attempt_count + 1, updated_at = now()
      FROM bench_pgbench_workers w
     WHERE w.client_id = :client_id
       AND t.task_id = ANY (ARRAY(SELECT q.task_id FROM taskforge.tasks q
                                   WHERE q.state = 'QUEUED' AND NOT q.keyed AND q.queue = 'bench' AND q.scheduled_at <= now()
                                     AND q.attempt_count < q.max_attempts
                                   ORDER BY q.priority DESC, q.created_at, q.task_id
                                   LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING t.task_id, t.attempt_count, w.worker_id, t.lease_expires_at, t.deadline_at
), started AS (
    INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, started_at, lease_expires_at, deadline_at)
    SELECT c.task_id, c.attempt_count, c.worker_id, 'RUNNING', now(), c.lease_expires_at, c.deadline_at
      FROM claimed c
)
SELECT coalesce(array_agg(task_id), '{}') AS task_ids FROM claimed \gset
