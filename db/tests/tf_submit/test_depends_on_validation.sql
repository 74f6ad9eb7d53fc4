-- tf_submit refuses a bad depends_on or flow key with the SQLSTATE and COLUMN naming it: a NULL element, a multidimensional array and more than 1000 distinct parents are TF400 depends_on, an unknown parent TF404 depends_on, a flow key of 0 or 201 characters TF400 rate_key / concurrency_key / ordering_key; the edges (1000 distinct parents, 200-character keys) are accepted, and nothing is written on error.
BEGIN;
SELECT plan(25);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message "<argument>: ..." and the argument as the error's COLUMN field.
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
    v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') AND v_column = p_argument THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ..." and COLUMN %s, got %s',
        p_sqlstate, p_argument, p_argument, coalesce(v_state || ' "' || v_message || '" COLUMN ' || coalesce(v_column, 'NULL'), 'no error')));
END;
$helper$;
CREATE TEMP TABLE parent AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'submit_deps_val_parent');
DO $$ BEGIN PERFORM set_config('tftest.parent', (SELECT task_id FROM parent)::text, true); END $$;

-- depends_on
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val',
                              depends_on => ARRAY[current_setting('tftest.parent')::bigint, NULL])$$,
    'TF400', 'depends_on', 'a NULL element is TF400 depends_on');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', depends_on => ARRAY[NULL::bigint])$$,
    'TF400', 'depends_on: must not contain NULL (element 0 is NULL)', 'the message names the NULL element (0-based)');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val',
                              depends_on => ARRAY[[current_setting('tftest.parent')::bigint], [current_setting('tftest.parent')::bigint]])$$,
    'TF400', 'depends_on', 'a two-dimensional array is TF400 depends_on (not 0A000 from array_position)');
-- The count is checked before the parents are looked up: 1001 ids that name no task are TF400, not TF404.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val',
                              depends_on => ARRAY(SELECT -g FROM generate_series(1, 1001) g))$$,
    'TF400', 'depends_on', '1001 distinct parents are TF400 depends_on');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', depends_on => ARRAY(SELECT -g FROM generate_series(1, 1001) g))$$,
    'TF400', 'depends_on: must name at most 1000 parent tasks, got 1001', 'the message gives the limit and the count');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val',
                              depends_on => ARRAY[current_setting('tftest.parent')::bigint, 9223372036854775807])$$,
    'TF404', 'depends_on', 'an unknown parent is TF404 depends_on');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val',
                     depends_on => ARRAY[9223372036854775807, current_setting('tftest.parent')::bigint, -5])$$,
    'TF404', 'depends_on: task -5 does not exist', 'the message names the lowest missing id');

-- 1000 distinct parents, each given twice, are accepted: duplicates count once towards the limit.
CREATE TEMP TABLE many AS SELECT task_id FROM taskforge.tf_submit_many(
    (SELECT jsonb_agg(jsonb_build_object('task_type', 'noop', 'queue', 'submit_deps_val_many')) FROM generate_series(1, 1000)));
CREATE TEMP TABLE big AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val_big',
    depends_on => (SELECT array_agg(task_id) || array_agg(task_id ORDER BY task_id DESC) FROM many));
SELECT results_eq($$SELECT t.state::text, t.parents_pending FROM big JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES ('BLOCKED'::text, 1000)$$, '1000 distinct parents given twice (2000 ids): BLOCKED, 1000 pending');
SELECT is((SELECT count(*)::int FROM taskforge.task_dependencies WHERE child_task_id = (SELECT task_id FROM big)), 1000,
          'one edge per distinct parent');

-- Flow keys: 1..200 characters.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', rate_key => '')$$,
    'TF400', 'rate_key', 'an empty rate_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', rate_key => repeat('r', 201))$$,
    'TF400', 'rate_key', 'a 201-character rate_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', concurrency_key => '')$$,
    'TF400', 'concurrency_key', 'an empty concurrency_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', concurrency_key => repeat('c', 201))$$,
    'TF400', 'concurrency_key', 'a 201-character concurrency_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', ordering_key => '')$$,
    'TF400', 'ordering_key', 'an empty ordering_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', ordering_key => repeat('o', 201))$$,
    'TF400', 'ordering_key', 'a 201-character ordering_key is TF400');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', ordering_key => repeat('o', 201))$$,
    'TF400', 'ordering_key: must be 1 to 200 characters, got 201', 'the message gives the length');
-- A valid key before an invalid one writes nothing either (no concurrency_keys or ordering_keys row).
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val', concurrency_key => 'submit-deps-val-c',
                              ordering_key => 'submit-deps-val-o', rate_key => '',
                              depends_on => ARRAY[current_setting('tftest.parent')::bigint])$$,
    'TF400', 'rate_key', 'valid keys and parents with an empty rate_key: TF400 rate_key');
CREATE TEMP TABLE edge AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val_edge', rate_key => repeat('r', 200),
    concurrency_key => repeat('c', 200), ordering_key => repeat('o', 200));
SELECT results_eq($$SELECT t.state::text, length(t.rate_key), length(t.concurrency_key), length(t.ordering_key), t.keyed
                      FROM edge JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES ('QUEUED'::text, 200, 200, 200, true)$$, '200-character keys are accepted, and the task is keyed');
CREATE TEMP TABLE one_char AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_val_edge', rate_key => 'x');
SELECT results_eq($$SELECT t.state::text, t.rate_key::text, t.concurrency_key::text, t.ordering_key::text, t.keyed
                      FROM one_char JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES ('QUEUED'::text, 'x'::text, NULL::text, NULL::text, true)$$, 'a 1-character key is accepted; the others stay NULL');

-- Nothing was written by the refused calls.
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'submit_deps_val'), 0, 'no refused submit wrote a task');
SELECT is((SELECT has_children FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM parent)), false,
          'the parent named by refused submits is not marked has_children');
SELECT is_empty($$SELECT * FROM taskforge.task_dependencies WHERE parent_task_id = (SELECT task_id FROM parent)$$,
                'and no edge names it');
SELECT is_empty($$SELECT * FROM taskforge.concurrency_keys WHERE concurrency_key = 'submit-deps-val-c'$$,
                'no concurrency_keys row for the refused submit''s key');
SELECT is_empty($$SELECT * FROM taskforge.ordering_keys WHERE ordering_key = 'submit-deps-val-o'$$,
                'no ordering_keys row for the refused submit''s key');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
