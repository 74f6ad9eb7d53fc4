-- Ceiling (b): one registered TaskForge worker per pgbench client, found by :client_id.
-- Run once per measured point on a migrated database by `taskforge bench ceiling`; the Python
-- side then registers the workers (taskforge.tf_register_worker) and submits the noop tasks.
DROP TABLE IF EXISTS bench_pgbench_workers;
CREATE TABLE bench_pgbench_workers (
    client_id int PRIMARY KEY,
    worker_id uuid NOT NULL
);
