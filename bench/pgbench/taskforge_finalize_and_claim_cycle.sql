-- Ceiling (c), one cycle through taskforge.tf_finalize_and_claim: finalize the task this client
-- claimed in its previous cycle and claim the next one, in one round trip and one commit.
-- pgbench keeps a client's variables across cycles; `taskforge bench ceiling` starts every
-- client with -D task_id=0, so a client's first cycle only claims.
\if :task_id = 0
SELECT c.task_id, c.attempt_number
  FROM bench_pgbench_workers w
 CROSS JOIN LATERAL taskforge.tf_finalize_and_claim(
           worker_id => w.worker_id, task_ids => '{}'::bigint[], attempt_numbers => '{}'::int[],
           outcomes => '{}'::text[], queues => ARRAY['bench'], lease_seconds => 30, max_tasks => 1) c
 WHERE w.client_id = :client_id AND c.kind = 'claimed' \gset
\else
SELECT c.task_id, c.attempt_number
  FROM bench_pgbench_workers w
 CROSS JOIN LATERAL taskforge.tf_finalize_and_claim(
           worker_id => w.worker_id, task_ids => ARRAY[:task_id]::bigint[],
           attempt_numbers => ARRAY[:attempt_number]::int[], outcomes => '{succeeded}'::text[],
           queues => ARRAY['bench'], lease_seconds => 30, max_tasks => 1) c
 WHERE w.client_id = :client_id AND c.kind = 'claimed' \gset
\endif
