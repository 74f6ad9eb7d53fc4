-- Ceiling (a): a one-table queue, the least a SKIP LOCKED claim/finish can cost.
-- Run once per measured point by `taskforge bench ceiling` (then filled and vacuumed).
DROP TABLE IF EXISTS bench_queue;
CREATE TABLE bench_queue (
    id      bigserial PRIMARY KEY,
    state   text NOT NULL DEFAULT 'queued',
    payload jsonb NOT NULL DEFAULT '{}'
);
-- Only queued rows, in claim order (the counterpart of TaskForge's partial claim index).
CREATE INDEX bench_queue_queued_idx ON bench_queue (id) WHERE state = 'queued';
