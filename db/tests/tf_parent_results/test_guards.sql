-- tf_parent_results answers only the attempt that holds the task: another worker, another attempt number, or a task that is not RUNNING (BLOCKED, QUEUED, finished) is TF409 COLUMN task_id; no such task is TF404 task_id; NULL or out-of-range arguments are TF400 naming them.
BEGIN;
SELECT plan(12);
-- refusal(sql): 'SQLSTATE COLUMN' of the error sql raises (the message must start with 'COLUMN: '), or what went wrong instead.
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_message text; v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
        IF v_column IS NULL OR NOT starts_with(v_message, v_column || ': ') THEN
            RETURN format('%s without a matching COLUMN (%s): %s', v_state, coalesce(v_column, 'NULL'), v_message);
        END IF;
        RETURN v_state || ' ' || v_column;
    END;
    RETURN 'no error';
END;
$helper$;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('parent-guards-w1') AS id, taskforge.tf_register_worker('parent-guards-w2') AS other;
CREATE TEMP TABLE parent AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'parent_guards_p');
CREATE TEMP TABLE child AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'parent_guards_c',
    depends_on => ARRAY[(SELECT task_id FROM parent)]);
DO $$ BEGIN
    PERFORM set_config('tftest.w', (SELECT id FROM w)::text, true);
    PERFORM set_config('tftest.other', (SELECT other FROM w)::text, true);
    PERFORM set_config('tftest.child', (SELECT task_id FROM child)::text, true);
    PERFORM set_config('tftest.parent', (SELECT task_id FROM parent)::text, true);
END $$;
CREATE FUNCTION pg_temp.call(p_task text, p_worker text, p_attempt text) RETURNS text LANGUAGE sql AS $helper$
    SELECT format('SELECT * FROM taskforge.tf_parent_results(%s, %s, %s)', p_task, p_worker, p_attempt)
$helper$;

SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.w')) || '::uuid', '1')),
          'TF409 task_id', 'a BLOCKED task: TF409');
CREATE TEMP TABLE cp AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['parent_guards_p']);
CREATE TEMP TABLE fp AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM parent), (SELECT id FROM w), 1, 'succeeded', result => '{"ok": true}');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.w')) || '::uuid', '1')),
          'TF409 task_id', 'a QUEUED task (released, not claimed): TF409');
CREATE TEMP TABLE cc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['parent_guards_c']);
SELECT results_eq($$SELECT parent_task_id, state, result FROM taskforge.tf_parent_results(current_setting('tftest.child')::bigint,
                                                                                         current_setting('tftest.w')::uuid, 1)$$,
                  $$SELECT task_id, 'SUCCEEDED'::text, '{"ok": true}'::jsonb FROM parent$$, 'the holder of attempt 1 gets the row');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.other')) || '::uuid', '1')),
          'TF409 task_id', 'another worker: TF409');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.w')) || '::uuid', '2')),
          'TF409 task_id', 'another attempt number: TF409');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.parent'), quote_literal(current_setting('tftest.w')) || '::uuid', '1')),
          'TF409 task_id', 'a SUCCEEDED task, even asked by its last worker: TF409');
SELECT is(pg_temp.refusal(pg_temp.call('9223372036854775807', quote_literal(current_setting('tftest.w')) || '::uuid', '1')),
          'TF404 task_id', 'no such task: TF404');
SELECT is(pg_temp.refusal(pg_temp.call('NULL', quote_literal(current_setting('tftest.w')) || '::uuid', '1')),
          'TF400 task_id', 'task_id NULL: TF400');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), 'NULL', '1')), 'TF400 worker_id', 'worker_id NULL: TF400');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.w')) || '::uuid', 'NULL')),
          'TF400 attempt_number', 'attempt_number NULL: TF400');
SELECT is(pg_temp.refusal(pg_temp.call(current_setting('tftest.child'), quote_literal(current_setting('tftest.w')) || '::uuid', '1.5')),
          'TF400 attempt_number', 'a fractional attempt_number: TF400');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
