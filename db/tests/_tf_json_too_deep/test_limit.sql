-- The JSON nesting limit (taskforge._tf_json_too_deep, 100 levels) holds for everything TaskForge stores and hands out: a payload (tf_submit), a result (tf_finalize, and results[i] of the batch finalize) is refused at 101 levels with TF400 naming it and accepted at 100, nothing written on refusal; an error of any depth is stored (an error never makes finalize fail), flattened to its text when too deep.
BEGIN;
SELECT plan(19);
-- nested(levels): {"a": [[...1...]]} with `levels` containers in all.
CREATE FUNCTION pg_temp.nested(p_levels int)
RETURNS jsonb
LANGUAGE sql
AS $helper$
    SELECT ('{"a":' || repeat('[', p_levels - 1) || '1' || repeat(']', p_levels - 1) || '}')::jsonb;
$helper$;
-- depth(value): the nesting depth of a JSON value (objects and arrays; a scalar is 0).
CREATE FUNCTION pg_temp.depth(p_value jsonb)
RETURNS int
LANGUAGE sql
AS $helper$
    WITH RECURSIVE walk(v, d) AS (
        SELECT p_value, 1
        UNION ALL
        SELECT c.value, w.d + 1
          FROM walk w, LATERAL (SELECT value FROM jsonb_each(CASE WHEN jsonb_typeof(w.v) = 'object' THEN w.v END)
                                UNION ALL
                                SELECT value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.v) = 'array' THEN w.v END)) c
         WHERE jsonb_typeof(c.value) IN ('object', 'array'))
    SELECT max(d) FROM walk WHERE jsonb_typeof(v) IN ('object', 'array');
$helper$;

SELECT is(taskforge._tf_json_too_deep(pg_temp.nested(100)), false, '100 levels are within the limit');
SELECT is(taskforge._tf_json_too_deep(pg_temp.nested(101)), true, '101 levels are too deep');
SELECT is(taskforge._tf_json_too_deep('"[[[[[["'::jsonb), false, 'brackets inside a string are text');
SELECT is(taskforge._tf_json_too_deep(NULL), NULL::boolean, 'NULL is NULL');
SELECT is(pg_temp.depth(pg_temp.nested(100)), 100, 'the test helper counts as the limit does');

-- Payloads (tf_submit's own tests cover the forms in detail).
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(101), 'q_jdepth')$$,
    'payload: must be nested at most 100 levels deep%', 'a payload of 101 levels is TF400');
SELECT lives_ok($$SELECT * FROM taskforge.tf_submit('noop', pg_temp.nested(100), 'q_jdepth')$$, 'a payload of 100 levels is taken');

-- Results: tf_finalize.
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_jdepth') AS id;
CREATE TEMP TABLE s AS SELECT (taskforge.tf_submit('noop', '{}', 'q_jdepth2')).task_id FROM generate_series(1, 4);
CREATE TEMP TABLE c AS
SELECT row_number() OVER (ORDER BY task_id) AS n, task_id, attempt_number
  FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_jdepth2'], 300, 4);
SELECT is((SELECT count(*)::int FROM c), 4, 'four tasks claimed');
SELECT throws_like(format($$SELECT * FROM taskforge.tf_finalize(%s, %L, 1, 'succeeded', result => pg_temp.nested(101))$$,
        (SELECT task_id FROM c WHERE n = 1), (SELECT id FROM w)),
    'result: must be nested at most 100 levels deep%', 'tf_finalize refuses a result of 101 levels');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM c WHERE n = 1)), 'RUNNING',
    'and writes nothing: the task is still RUNNING');
SELECT is((SELECT accepted FROM taskforge.tf_finalize((SELECT task_id FROM c WHERE n = 1), (SELECT id FROM w), 1, 'succeeded',
        result => pg_temp.nested(100))), true, 'a result of 100 levels is stored');
SELECT is((SELECT pg_temp.depth(result) FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM c WHERE n = 1)), 100,
    'as given');

-- Results: the batch finalize names the element.
SELECT throws_like(format($$SELECT * FROM taskforge.tf_finalize_many(%L, ARRAY[%s, %s], '{1,1}', '{succeeded,succeeded}',
        ARRAY['{}'::jsonb, pg_temp.nested(101)])$$,
        (SELECT id FROM w), (SELECT task_id FROM c WHERE n = 2), (SELECT task_id FROM c WHERE n = 3)),
    'results[2]: must be nested at most 100 levels deep%', 'tf_finalize_many refuses results[2] of 101 levels');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM c WHERE n IN (2, 3)) AND state = 'RUNNING'),
    2, 'and writes nothing: both tasks are still RUNNING');
SELECT throws_like(format($$SELECT * FROM taskforge.tf_finalize_and_claim(%L, ARRAY[%s], '{1}', '{succeeded}',
        ARRAY[pg_temp.nested(101)], max_tasks => 0)$$, (SELECT id FROM w), (SELECT task_id FROM c WHERE n = 2)),
    'results[1]: must be nested at most 100 levels deep%', 'tf_finalize_and_claim refuses it too');

-- Errors: never refused; flattened when too deep.
SELECT is((SELECT accepted FROM taskforge.tf_finalize((SELECT task_id FROM c WHERE n = 2), (SELECT id FROM w), 1, 'failed',
        error => jsonb_build_object('type', 'Deep', 'message', ('{"a":' || repeat('[', 1000) || repeat(']', 1000) || '}')::jsonb))),
    true, 'an error nested 1,001 levels deep is taken');
SELECT is((SELECT jsonb_build_object('type', error -> 'type', 'truncated', error -> 'truncated', 'depth', pg_temp.depth(error),
                                     'starts', left(error ->> 'message', 12))
             FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM c WHERE n = 2)),
    '{"type": "Deep", "truncated": true, "depth": 1, "starts": "{\"type\": \"De"}'::jsonb,
    'stored flat: its type, its JSON text as the message, truncated');
SELECT is((SELECT r.accepted FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT task_id FROM c WHERE n = 3)], '{1}',
        '{failed}', errors => ARRAY[pg_temp.nested(150)]) r), true, 'the batch finalize takes a deep error');
SELECT is((SELECT pg_temp.depth(error) FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM c WHERE n = 3)), 1,
    'and stores it flat');
SELECT * FROM finish();
ROLLBACK;
