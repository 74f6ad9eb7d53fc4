-- Ceiling (h1), one cycle: (a1) that also keeps every attempt. ONE statement finishes the row
-- this client claimed in its previous cycle and closes its attempt row, claims the next row and
-- opens an attempt row for it: one round trip and one commit per task. pgbench keeps a client's
-- variables across cycles; `taskforge bench ceiling` starts every client with -D id=0 (no such
-- row), so a client's first cycle only claims.
WITH finished AS (
    UPDATE bench_queue SET state = 'done' WHERE id = :id
), ended AS (
    UPDATE bench_attempts SET state = 'succeeded', finished_at = now()
     WHERE task_id = :id AND attempt_number = 1
), claimed AS (
    UPDATE bench_queue SET state = 'running'
     WHERE id = (SELECT id FROM bench_queue WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id
), started AS (
    INSERT INTO bench_attempts (task_id, attempt_number, state) SELECT id, 1, 'running' FROM claimed
)
SELECT id FROM claimed \gset
