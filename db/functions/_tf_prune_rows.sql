-- taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz) -> int     (private helper)
--
-- Purpose:    the deletes of tf_prune for the given tasks, which the caller has locked (FOR
--             UPDATE) and chosen: each task (read by primary key) still terminal and finished
--             before cutoff is deleted, its attempts with it (ON DELETE CASCADE) and its
--             idempotency key (taskforge.idempotency_keys), then the dependency edges of the
--             deleted tasks, both ways (task_dependencies has no foreign keys: 20_tables.sql).
--             tf_prune calls it once for its whole batch (fast path) and, when that raises an
--             error about a row, once per task, each in its own subtransaction.
-- Parameters: task_ids  the locked candidates (any order; NULL or empty: nothing).
--             cutoff    tf_prune's now - older_than_seconds.
-- Returns:    the number of tasks deleted.
-- Errors:     whatever a delete raises (a trigger, a foreign key, ...): nothing is deleted then.
-- Locks:      the given tasks rows (already the caller's), their attempts and edges.
-- Plans:      SET plan_cache_mode = force_generic_plan, overriding tf_prune's force_custom_plan,
--             with sequential scans, hash and merge joins and JIT off, as on the hot path
--             (docs/design.md, "Plan stability"): its statements and the foreign key's cascade
--             (a DELETE of attempts per deleted task, run by PostgreSQL) each keep one cached
--             plan. None joins a table: the tasks are looked up one by one from the ids (LATERAL,
--             by primary key) and deleted by id (task_id = ANY), their keys by primary key from
--             the deleted rows (a nested loop over them), so the generic plan is right
--             whatever the number of ids or the size of the tables. Under the caller's setting the
--             cascade was planned again for every task: 214,000 backend instructions per pruned
--             task before, 140,000 after (bench/turn_instructions.sh prune; docs/benchmarks.md,
--             "Retention's cost"). tests/sql/test_plans.py checks the plans cached on empty tables.
-- Clock:      none (the caller's cutoff).
-- By hand:    no: call tf_prune, which chooses and locks the rows first.
CREATE OR REPLACE FUNCTION taskforge._tf_prune_rows(task_ids bigint[], cutoff timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    -- Each given task by primary key (LIMIT 1 keeps the tests out of the lookup, so no plan
    -- walks tasks_finished_idx, which holds all finished history), then the tests.
    SELECT array_agg(t.task_id) INTO v_ids
      FROM unnest(_tf_prune_rows.task_ids) AS i(task_id)
     CROSS JOIN LATERAL (SELECT x.task_id, x.state, x.finished_at FROM taskforge.tasks x
                          WHERE x.task_id = i.task_id ORDER BY x.task_id LIMIT 1) t
     WHERE t.finished_at < _tf_prune_rows.cutoff AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    -- By id, joining nothing (the rows are the caller's, locked, and tested above); the
    -- attempts go with them (the foreign key's ON DELETE CASCADE), the keys of keyed ones after.
    WITH gone AS (DELETE FROM taskforge.tasks t WHERE t.task_id = ANY (v_ids) RETURNING t.idempotency_key)
    DELETE FROM taskforge.idempotency_keys k USING gone
     WHERE gone.idempotency_key IS NOT NULL AND k.idempotency_key = gone.idempotency_key;
    IF EXISTS (SELECT 1 FROM taskforge.task_dependencies LIMIT 1) THEN
        DELETE FROM taskforge.task_dependencies d
         WHERE d.child_task_id = ANY (v_ids) OR d.parent_task_id = ANY (v_ids);
    END IF;
    RETURN cardinality(v_ids);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) IS
    'Private: tf_prune''s deletes for locked chosen tasks (still terminal, finished before cutoff), with their attempts and dependency edges; returns the count.';
REVOKE ALL ON FUNCTION taskforge._tf_prune_rows(bigint[], timestamptz) FROM PUBLIC;
