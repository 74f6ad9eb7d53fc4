-- Ceiling (a1), one cycle: ONE statement finishes the row this client claimed in its previous
-- cycle and claims the next, so one round trip and one commit per task: the best a worker doing
-- one round trip per task can reach. pgbench keeps a client's variables across cycles;
-- `taskforge bench ceiling` starts every client with -D id=0 (no such row), so a client's first
-- cycle only claims.
WITH finished AS (
    UPDATE bench_queue SET state = 'done' WHERE id = :id
), claimed AS (
    UPDATE bench_queue SET state = 'running'
     WHERE id = (SELECT id FROM bench_queue WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id
)
SELECT id FROM claimed \gset
