-- Ceiling (a2), one cycle: claim :batch rows in one statement, then finish them in one statement
-- (each its own autocommit transaction): the bare batched cycle, B = :batch rows per cycle.
-- `taskforge bench ceiling` sets -D batch=B (the batched worker's claim size).
WITH claimed AS (
    UPDATE bench_queue SET state = 'running'
     WHERE id = ANY (ARRAY(SELECT id FROM bench_queue WHERE state = 'queued'
                            ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING id
)
SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \gset
UPDATE bench_queue SET state = 'done' WHERE id = ANY (:ids::bigint[]);
