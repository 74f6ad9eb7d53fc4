-- tf_submit refuses a payload whose jsonb value alone is over 8 MiB without printing it (TF400 naming payload), still judges smaller values by their exact JSON text, and accepts the densest jsonb (an array of zeros, about 4 bytes of jsonb per byte of text) up to 1 MiB of text.
BEGIN;
SELECT plan(6);

SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', jsonb_build_object('a', repeat('x', 9 * 1048576)), 'q_size')$$,
    'payload: must be at most 1048576 bytes as JSON text, got a jsonb value of %',
    'a 9 MiB string payload is refused from its jsonb length');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit_many(jsonb_build_array(jsonb_build_object('task_type', 'noop', 'queue', 'q_size',
        'payload', jsonb_build_object('a', repeat('x', 9 * 1048576)))))$$,
    'requests[0].payload: must be at most 1048576 bytes as JSON text, got a jsonb value of %',
    'tf_submit_many refuses it the same way, naming the element');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', jsonb_build_object('a', repeat('x', 2 * 1048576)), 'q_size')$$,
    'payload: must be at most 1048576 bytes as JSON text, got 2097161',
    'a 2 MiB payload (under 8 MiB as jsonb) is refused with its exact text length');

-- {"a": [0, 0, ...]}: 3 bytes of text per zero (", 0"), about 12 bytes of jsonb.
SELECT cmp_ok((SELECT pg_column_size(p) FROM (SELECT jsonb_build_object('a', array_fill(0, ARRAY[349000])::int[]) AS p) s),
    '>', 4 * 1000000, 'the dense payload takes over 4 MB as jsonb');
SELECT cmp_ok((SELECT octet_length(p::text) FROM (SELECT jsonb_build_object('a', array_fill(0, ARRAY[349000])::int[]) AS p) s),
    '<=', 1048576, 'and at most 1 MiB as text');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', jsonb_build_object('a', array_fill(0, ARRAY[349000])::int[]), 'q_size')),
    true, 'so it is accepted');
SELECT * FROM finish();
ROLLBACK;
