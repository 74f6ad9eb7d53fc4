-- taskforge.tf_partition_history(tasks_per_partition numeric, partitions_ahead numeric DEFAULT 1)
--   -> int
--
-- Purpose:    convert an install, with its data, to the partitioned history (docs/operations.md,
--             "Partitioned history"; opt-in, once): taskforge.tasks and taskforge.attempts
--             become tables PARTITION BY RANGE (task_id), and retention (tf_prune) drops whole
--             ranges instead of deleting rows. In one transaction: the two tables are renamed
--             tasks_p<N>/attempts_p<N> and attached unchanged (no row is copied; PostgreSQL
--             scans each once to check its range) as the first range, from the lowest task id
--             up to the first multiple of tasks_per_partition above every id drawn so far;
--             new parents named tasks and attempts get the old tables' columns, defaults,
--             checks, primary keys, foreign keys, indexes (same names), row triggers and
--             comments, read from the catalog, and every view of the schema is defined again
--             over them; attempts_p<N> keeps its foreign key to tasks_p<N> (each range's
--             attempts refer to their twin range); task_id's identity becomes a plain sequence
--             of the same name (taskforge.tasks_task_id_seq, same next value), since a
--             partitioned table has no identity column on PostgreSQL 15; then partitions_ahead
--             empty ranges are made (taskforge._tf_add_partition) and the layout is recorded in
--             taskforge.history_layout and taskforge.history_partitions. The functions name
--             tables, not partitions, and stay as they are, except those whose signature names
--             a row type of the two tables (taskforge._tf_lock_task returns a tasks row): they
--             are made again over the parent's type, with their comment and privileges. Objects
--             outside schema taskforge that depend on the two tables (a view of your own) stay
--             bound to the first range: drop them first, make them again after.
-- Parameters: tasks_per_partition  whole number 1000..1000000000: task ids per range (few, large
--                                   ranges: every partition costs each claim and finalize some
--                                   work, docs/benchmarks.md).
--             partitions_ahead     whole number 1..100: empty ranges kept ahead of the next id
--                                   (tf_make_partitions keeps them).
-- Returns:    the number of ranges made, the first (the old tables) included.
-- Errors:     TF400 naming the argument; TF409 'tasks: already partitioned' the second time;
--             55P03 when the tables stay locked past the caller's lock_timeout. Nothing is
--             changed then.
-- Locks:      ACCESS EXCLUSIVE on tasks and attempts until the caller commits (taken first:
--             every worker, submit and console read waits for the conversion).
-- Security:   SECURITY DEFINER, EXECUTE for nobody: only the owner or a superuser (the
--             migrating user) calls it; the objects it makes belong to taskforge_owner.
-- Clock:      clock_timestamp() (partitioned_at, created_at).
-- By hand:    yes, or `taskforge db partition` (docs/cli.md). There is no way back but a dump
--             and restore into a new install.
CREATE OR REPLACE FUNCTION taskforge.tf_partition_history(
    tasks_per_partition numeric, partitions_ahead numeric DEFAULT 1)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_tasks oid;
    v_attempts oid;
    v_size bigint;
    v_ahead int;
    v_next bigint;
    v_end bigint;
    v_no bigint;
    v_before text[];
    v_after text[];
    v_statement text;
    r record;
BEGIN
    PERFORM taskforge._tf_check_int('tasks_per_partition', tf_partition_history.tasks_per_partition, 1000, 1000000000);
    PERFORM taskforge._tf_check_int('partitions_ahead', tf_partition_history.partitions_ahead, 1, 100);
    v_size := tf_partition_history.tasks_per_partition;
    v_ahead := tf_partition_history.partitions_ahead;
    -- Locked first, then looked at: a second conversion waiting here finds the first's work.
    LOCK TABLE taskforge.tasks, taskforge.attempts IN ACCESS EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM taskforge.history_layout) THEN
        RAISE EXCEPTION USING ERRCODE = 'TF409', MESSAGE = 'tasks: already partitioned',
            HINT = 'taskforge.history_partitions lists the ranges; tf_make_partitions adds more.';
    END IF;
    v_tasks := 'taskforge.tasks'::regclass;
    v_attempts := 'taskforge.attempts'::regclass;

    -- The first range ends at the first multiple of the size above every id drawn so far.
    SELECT CASE WHEN s.is_called THEN s.last_value + 1 ELSE s.last_value END INTO v_next
      FROM taskforge.tasks_task_id_seq s;
    v_next := greatest(v_next, (SELECT max(t.task_id) + 1 FROM taskforge.tasks t));
    v_end := ((v_next - 1) / v_size + 1) * v_size;
    v_no := v_end / v_size - 1;

    -- What the parents must have, read before anything is renamed: these definitions name
    -- taskforge.tasks and taskforge.attempts, which will then be the parents.
    -- Steps 1-4 are run on the parents before the old tables are attached, 5-6 after.
    SELECT array_agg(x.statement ORDER BY x.step, x.seq) FILTER (WHERE x.step <= 4),
           array_agg(x.statement ORDER BY x.step, x.seq) FILTER (WHERE x.step > 4)
      INTO v_before, v_after
      FROM (
        -- Primary keys and foreign keys, but the attempts -> tasks key (it stays with attempts_p<N>).
        SELECT 1 AS step, c.oid::bigint AS seq,
               format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                      pg_get_constraintdef(c.oid)) AS statement
          FROM pg_constraint c
         WHERE c.conrelid IN (v_tasks, v_attempts)
           AND (c.contype = 'p' OR (c.contype = 'f' AND c.confrelid <> v_tasks))
        UNION ALL
        SELECT 2, i.indexrelid::bigint, pg_get_indexdef(i.indexrelid)
          FROM pg_index i
         WHERE i.indrelid IN (v_tasks, v_attempts) AND NOT i.indisprimary
        UNION ALL
        SELECT 3, c.oid::bigint, format('COMMENT ON TABLE %s IS %L', c.oid::regclass, obj_description(c.oid, 'pg_class'))
          FROM pg_class c WHERE c.oid IN (v_tasks, v_attempts) AND obj_description(c.oid, 'pg_class') IS NOT NULL
        UNION ALL
        -- Functions whose signature names a row type of the two tables (taskforge._tf_lock_task
        -- returns a tasks row): dropped and made again over the parent's row type, with their
        -- comment and EXECUTE privileges.
        SELECT 4, f.oid::bigint,
               format('DROP FUNCTION %s; %s; REVOKE ALL ON FUNCTION %s FROM PUBLIC; COMMENT ON FUNCTION %s IS %L; ',
                      f.oid::regprocedure, pg_get_functiondef(f.oid), f.oid::regprocedure, f.oid::regprocedure,
                      obj_description(f.oid, 'pg_proc'))
               || coalesce((SELECT string_agg(format('GRANT EXECUTE ON FUNCTION %s TO %s', f.oid::regprocedure,
                                                     CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END),
                                              '; ')
                              FROM aclexplode(f.proacl) a WHERE a.grantee <> f.proowner), '')
          FROM pg_proc f
         WHERE f.oid IN (SELECT d.objid FROM pg_depend d
                          WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_type'::regclass
                            AND d.refobjid IN (SELECT t.oid FROM pg_type t JOIN pg_class c ON t.oid IN (c.reltype, (
                                                     SELECT a.typarray FROM pg_type a WHERE a.oid = c.reltype))
                                                WHERE c.oid IN (v_tasks, v_attempts)))
        UNION ALL
        -- After the attach: a trigger made on a parent is made on each of its partitions.
        SELECT 5, g.oid::bigint, pg_get_triggerdef(g.oid)
          FROM pg_trigger g WHERE g.tgrelid IN (v_tasks, v_attempts) AND NOT g.tgisinternal
        UNION ALL
        SELECT 6, c.oid::bigint,
               format('CREATE OR REPLACE VIEW %s%s AS %s', c.oid::regclass,
                      CASE WHEN c.reloptions IS NOT NULL THEN format(' WITH (%s)', array_to_string(c.reloptions, ', ')) ELSE '' END,
                      pg_get_viewdef(c.oid))
          FROM pg_class c WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind = 'v'
      ) x;

    INSERT INTO taskforge.history_layout (tasks_per_partition, partitions_ahead, tasks_options, attempts_options, partitioned_at)
    SELECT v_size, v_ahead, (SELECT c.reloptions FROM pg_class c WHERE c.oid = v_tasks),
           (SELECT c.reloptions FROM pg_class c WHERE c.oid = v_attempts), clock_timestamp();

    -- The old tables become the first range: renamed, their own names (indexes, keys,
    -- triggers) freed for the parents.
    FOR r IN SELECT g.tgname, g.tgrelid::regclass AS rel FROM pg_trigger g
              WHERE g.tgrelid IN (v_tasks, v_attempts) AND NOT g.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, r.rel);
    END LOOP;
    FOR r IN SELECT i.indexrelid::regclass AS idx, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid IN (v_tasks, v_attempts) AND NOT i.indisprimary LOOP
        EXECUTE format('ALTER INDEX %s RENAME TO %I', r.idx, r.relname || '_p' || v_no);
    END LOOP;
    FOR r IN SELECT c.conname, c.conrelid::regclass AS rel, cl.relname
               FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid
              WHERE c.conrelid IN (v_tasks, v_attempts) AND c.contype IN ('p', 'f') LOOP
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname,
                       r.relname || '_p' || v_no || substr(r.conname, length(r.relname) + 1));
    END LOOP;
    ALTER TABLE taskforge.tasks ALTER COLUMN task_id DROP IDENTITY;
    EXECUTE format('ALTER TABLE taskforge.tasks RENAME TO %I', 'tasks_p' || v_no);
    EXECUTE format('ALTER TABLE taskforge.attempts RENAME TO %I', 'attempts_p' || v_no);
    EXECUTE format('CREATE SEQUENCE taskforge.tasks_task_id_seq AS bigint START WITH %s', v_next);

    -- The parents, then the rest of their definition.
    EXECUTE format('CREATE TABLE taskforge.tasks (LIKE taskforge.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (task_id)',
                   'tasks_p' || v_no);
    EXECUTE format('CREATE TABLE taskforge.attempts (LIKE taskforge.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (task_id)',
                   'attempts_p' || v_no);
    ALTER TABLE taskforge.tasks ALTER COLUMN task_id SET DEFAULT nextval('taskforge.tasks_task_id_seq');
    ALTER SEQUENCE taskforge.tasks_task_id_seq OWNED BY taskforge.tasks.task_id;
    FOREACH v_statement IN ARRAY v_before LOOP
        EXECUTE v_statement;
    END LOOP;
    EXECUTE format('ALTER TABLE taskforge.tasks ATTACH PARTITION taskforge.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                   'tasks_p' || v_no, v_end);
    EXECUTE format('ALTER TABLE taskforge.attempts ATTACH PARTITION taskforge.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                   'attempts_p' || v_no, v_end);
    FOREACH v_statement IN ARRAY v_after LOOP
        EXECUTE v_statement;
    END LOOP;
    INSERT INTO taskforge.history_partitions (partition_no, first_task_id, end_task_id, created_at)
    VALUES (v_no, NULL, v_end, clock_timestamp());

    FOR i IN 1..v_ahead LOOP
        PERFORM taskforge._tf_add_partition(v_end + (i - 1) * v_size);
    END LOOP;
    RETURN 1 + v_ahead;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_partition_history(numeric, numeric) IS
    'Convert tasks and attempts, with their data, to tables partitioned by task_id ranges (the old tables become the first range); retention then drops whole ranges. Once; owner only. Returns the ranges made. Errors: TF400, TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_partition_history(numeric, numeric) FROM PUBLIC;
