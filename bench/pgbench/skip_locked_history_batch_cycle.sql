-- Ceiling (h2), one cycle: (a2) that also keeps every attempt. Claim :batch rows and open an
-- attempt row for each in one statement, then finish the rows and close their attempts in one
-- statement (each its own autocommit transaction). `taskforge bench ceiling` sets -D batch=B.
WITH claimed AS (
    UPDATE bench_queue SET state = 'running'
     WHERE id = ANY (ARRAY(SELECT id FROM bench_queue WHERE state = 'queued'
                            ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING id
), started AS (
    INSERT INTO bench_attempts (task_id, attempt_number, state) SELECT id, 1, 'running' FROM claimed
)
SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \gset
WITH ended AS (
    UPDATE bench_attempts SET state = 'succeeded', finished_at = now()
     WHERE task_id = ANY (:ids::bigint[]) AND attempt_number = 1
)
UPDATE bench_queue SET state = 'done' WHERE id = ANY (:ids::bigint[]);
