-- Ceilings (h1), (h2): the bare queue of (a) plus the least a durable attempt history needs, one
-- row per claim keyed by (task, attempt number), opened at the claim and closed at the finish.
-- No foreign key, no CHECK, no index but the key: the floor of keeping every attempt. It starts
-- with 100,000 rows of past attempts (negative task ids, which no cycle touches), so that the
-- VACUUM ANALYZE after the fill gives the planner a table with a history, as a queue that keeps
-- every attempt has: measured on an empty one, pgbench's cached generic plans read the whole
-- growing table on every cycle.
-- Run after skip_locked_setup.sql, once per measured point, by `taskforge bench ceiling`.
DROP TABLE IF EXISTS bench_attempts;
CREATE TABLE bench_attempts (
    task_id        bigint NOT NULL,
    attempt_number int NOT NULL,
    state          text NOT NULL,
    started_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz,
    PRIMARY KEY (task_id, attempt_number)
);
INSERT INTO bench_attempts (task_id, attempt_number, state, started_at, finished_at)
SELECT -g, 1, 'succeeded', now(), now() FROM generate_series(1, 100000) AS g;
