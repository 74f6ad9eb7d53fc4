-- Ceiling (c-batch), one cycle through taskforge.tf_finalize_and_claim: finalize (succeeded) the
-- :batch tasks this client claimed in its previous cycle and claim the next :batch, in one call,
-- one round trip and one commit. The claimed ids and attempt numbers are carried to the next
-- cycle as arrays (pgbench keeps a client's variables across cycles); `taskforge bench ceiling`
-- starts every client with -D task_ids={} -D attempt_numbers={} -D batch=B, so a client's first
-- cycle only claims.
SELECT coalesce(array_agg(c.task_id), '{}') AS task_ids,
       coalesce(array_agg(c.attempt_number), '{}') AS attempt_numbers
  FROM bench_pgbench_workers w
 CROSS JOIN LATERAL taskforge.tf_finalize_and_claim(
           worker_id => w.worker_id, task_ids => :task_ids::numeric[],
           attempt_numbers => :attempt_numbers::numeric[],
           outcomes => array_fill('succeeded'::text, ARRAY[cardinality(:task_ids::numeric[])]),
           queues => ARRAY['bench'], lease_seconds => 30, max_tasks => :batch) c
 WHERE w.client_id = :client_id AND c.kind = 'claimed' \gset
