-- tf_submit and tf_submit_many refuse a payload nested more than 100 levels deep (objects and arrays, the payload object counting as 1) with TF400 naming payload, accept exactly 100, count brackets inside strings as text, and write nothing on refusal.
BEGIN;
SELECT plan(15);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message that names the argument ("<argument>: <problem>").
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ...", got %s',
        p_sqlstate, p_argument, coalesce(v_state || ' "' || v_message || '"', 'no error')));
END;
$helper$;
-- nested(levels, innermost): {"a": [[...innermost...]]} with `levels` containers in all.
CREATE FUNCTION pg_temp.nested(p_levels int, p_innermost text)
RETURNS jsonb
LANGUAGE sql
AS $helper$
    SELECT ('{"a":' || repeat('[', p_levels - 1) || p_innermost || repeat(']', p_levels - 1) || '}')::jsonb;
$helper$;

-- The issue's poison payload: 1001 levels.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop',
        ('{"a":' || repeat('[', 1000) || repeat(']', 1000) || '}')::jsonb, 'q_depth')$$,
    'TF400', 'payload', 'the poison payload (an object around 1000 nested arrays) is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(101, '1'), 'q_depth')$$,
    'TF400', 'payload', '101 levels around a scalar are TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(101, ''), 'q_depth')$$,
    'TF400', 'payload', '101 levels ending in an empty array are TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(100, '{}'), 'q_depth')$$,
    'TF400', 'payload', '100 levels around an empty object (101 in all) are TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop',
        (repeat('{"k":', 101) || '1' || repeat('}', 101))::jsonb, 'q_depth')$$,
    'TF400', 'payload', '101 nested objects are TF400');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(101, '1'), 'q_depth')$$,
    'payload: must be nested at most 100 levels deep%', 'the message states the limit');

-- Exactly at the limit, and brackets that are only text.
SELECT is((SELECT created FROM taskforge.tf_submit('noop', pg_temp.nested(100, '1'), 'q_depth')),
    true, '100 levels around a scalar are accepted');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', pg_temp.nested(99, '{}'), 'q_depth')),
    true, '99 levels around an empty object (100 in all) are accepted');
SELECT is((SELECT created FROM taskforge.tf_submit('noop',
        jsonb_build_object('text', repeat('[', 5000), 'wide', (SELECT jsonb_agg(jsonb_build_array(i)) FROM generate_series(1, 1000) i)),
        'q_depth')),
    true, 'brackets inside a string and a wide but shallow payload are accepted');

-- tf_submit_many shares the rule, naming the element.
SELECT pg_temp.throws_arg(format('SELECT * FROM taskforge.tf_submit_many(%L)',
        '[{"task_type": "noop", "queue": "q_depth"}, {"task_type": "noop", "queue": "q_depth", "payload": '
        || pg_temp.nested(101, '1')::text || '}]'),
    'TF400', 'requests[1].payload', 'tf_submit_many refuses a 101-level payload naming requests[1].payload');
SELECT is((SELECT count(*)::int FROM taskforge.tf_submit_many(
        jsonb_build_array(jsonb_build_object('task_type', 'noop', 'queue', 'q_depth', 'payload', pg_temp.nested(100, '1'))))),
    1, 'tf_submit_many accepts a 100-level payload');

-- What PostgreSQL refuses before any function runs: deeper than max_stack_depth allows.
SELECT throws_ok($$SELECT ('{"a":' || repeat('[', 200000) || repeat(']', 200000) || '}')::jsonb$$,
    '54001', NULL, 'a document nested 200000 levels is refused by the jsonb parser itself (54001)');

-- Nothing was written by a refused call.
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_depth'), 4,
    'only the four accepted submits wrote a task');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_depth'
            AND jsonb_path_exists(payload, 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")')),
    0, 'no stored payload is deeper than 100 levels');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
