-- tf_submit_many refuses a bad depends_on, depends_on_positions or flow key with TF400 (TF404 for an unknown parent) naming requests[i].<key> in the message and as COLUMN: a position at or after the element's own index, a negative or fractional position, a list that is not an array, an element that is not a whole number; JSON null lists are none; nothing is written on error.
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
-- v(json): a call of tf_submit_many with the given element after a good one, as SQL text.
CREATE FUNCTION pg_temp.v(p_element text)
RETURNS text
LANGUAGE sql
AS $helper$
    SELECT format('SELECT * FROM taskforge.tf_submit_many(%L)',
                  '[{"task_type": "noop", "queue": "q_many_deps_validation"}, ' || p_element || ']');
$helper$;

-- depends_on_positions: earlier elements only.
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [1]}'),
    'TF400', 'requests[1].depends_on_positions', 'an element naming itself is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [0, 2]}'),
    'TF400', 'requests[1].depends_on_positions', 'a later position is TF400');
SELECT throws_ok(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [0, 2]}'),
    'TF400', 'requests[1].depends_on_positions: element 1 must be the position of an earlier element (0..0), got 2',
    'the message names the list element and the positions allowed');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [0]}]')$$,
    'TF400', 'requests[0].depends_on_positions', 'the first element can name no position');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [-1]}'),
    'TF400', 'requests[1].depends_on_positions', 'a negative position is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [0.5]}'),
    'TF400', 'requests[1].depends_on_positions', 'a fractional position is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": ["0"]}'),
    'TF400', 'requests[1].depends_on_positions', 'a string position is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [null]}'),
    'TF400', 'requests[1].depends_on_positions', 'a null position is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": [[0]]}'),
    'TF400', 'requests[1].depends_on_positions', 'a nested array is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": 0}'),
    'TF400', 'requests[1].depends_on_positions', 'a number instead of an array is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on_positions": {"0": 1}}'),
    'TF400', 'requests[1].depends_on_positions', 'an object instead of an array is TF400');

-- depends_on: whole numbers in a JSON array; existing tasks.
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": "1"}'),
    'TF400', 'requests[1].depends_on', 'a string instead of an array is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": [1.5]}'),
    'TF400', 'requests[1].depends_on', 'a fractional id is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": [true]}'),
    'TF400', 'requests[1].depends_on', 'a boolean id is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": [null]}'),
    'TF400', 'requests[1].depends_on', 'a null id is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": [9223372036854775808]}'),
    'TF400', 'requests[1].depends_on', 'an id beyond bigint is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "depends_on": [9223372036854775807]}'),
    'TF404', 'requests[1].depends_on', 'an unknown parent is TF404 requests[1].depends_on');
SELECT pg_temp.throws_arg(format('SELECT * FROM taskforge.tf_submit_many(%L)',
        jsonb_build_array(jsonb_build_object('task_type', 'noop', 'queue', 'q_many_deps_validation',
                                             'depends_on', (SELECT jsonb_agg(g) FROM generate_series(1, 1001) g)))),
    'TF400', 'requests[0].depends_on', '1001 distinct parents are TF400 (checked before they are looked up)');

-- Flow keys: JSON strings of 1..200 characters.
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "rate_key": 5}'),
    'TF400', 'requests[1].rate_key', 'a number as rate_key is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q_many_deps_validation", "concurrency_key": ""}'),
    'TF400', 'requests[1].concurrency_key', 'an empty concurrency_key is TF400');
SELECT pg_temp.throws_arg(pg_temp.v(format('{"task_type": "noop", "queue": "q_many_deps_validation", "ordering_key": "%s"}', repeat('o', 201))),
    'TF400', 'requests[1].ordering_key', 'a 201-character ordering_key is TF400');

-- JSON null lists are none.
CREATE TEMP TABLE nulls AS SELECT * FROM taskforge.tf_submit_many(
    '[{"task_type": "noop", "queue": "q_many_deps_nulls", "depends_on": null, "depends_on_positions": null, "rate_key": null},
      {"task_type": "noop", "queue": "q_many_deps_nulls", "depends_on": [], "depends_on_positions": []}]');
SELECT results_eq('SELECT state, created FROM nulls', $$VALUES ('QUEUED'::text, true), ('QUEUED', true)$$,
                  'null and empty lists are no parents: QUEUED');
SELECT is_empty($$SELECT * FROM taskforge.task_dependencies WHERE child_task_id IN (SELECT task_id FROM nulls)$$, 'and no edge');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_many_deps_validation'), 0,
          'no refused call wrote a task (not even its good first element)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
