-- Ceiling (b), one cycle through TaskForge's own functions: tf_claim one task, then
-- tf_finalize it as succeeded. Each statement is its own (autocommit) transaction, like the
-- worker's claim and finalize. The worker of this pgbench client comes from
-- bench_pgbench_workers (:client_id is pgbench's 0-based client number).
SELECT c.task_id, c.attempt_number, w.worker_id
  FROM bench_pgbench_workers w
 CROSS JOIN LATERAL taskforge.tf_claim(worker_id => w.worker_id, queues => ARRAY['bench'],
                                       lease_seconds => 30) c
 WHERE w.client_id = :client_id \gset
SELECT accepted FROM taskforge.tf_finalize(task_id => :task_id, worker_id => :worker_id::uuid,
                                           attempt_number => :attempt_number, outcome => 'succeeded');
