-- Ceiling (a), one cycle: claim the oldest queued row with FOR UPDATE SKIP LOCKED, then finish it.
-- Each statement is its own (autocommit) transaction, like tf_claim and tf_finalize.
UPDATE bench_queue SET state = 'running'
 WHERE id = (SELECT id FROM bench_queue WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
UPDATE bench_queue SET state = 'done' WHERE id = :id;
