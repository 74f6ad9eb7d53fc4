-- tf_finalize_many stores each element's error as tf_finalize does: a non-object becomes {"message": ...}, JSON null is no error, and errors over 16 KiB are capped (strings cut to 4,000 characters, marked truncated), in one batch.
BEGIN;
SELECT plan(13);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_errcap') AS id;
CREATE TEMP TABLE cases (label text PRIMARY KEY, outcome text, err jsonb);
INSERT INTO cases VALUES
    ('string',   'failed',    '"boom"'),
    ('array',    'failed',    '[1, "two"]'),
    ('jsonnull', 'failed',    'null'),
    ('small',    'retryable', '{"type": "KeyError", "message": "k", "detail": {"a": [1, 2]}}'),
    ('long',     'retryable', jsonb_build_object('type', 'E', 'message', repeat('x', 100000), 'code', 7)),
    ('longtext', 'failed',    to_jsonb(repeat('y', 50000))),
    ('manykeys', 'failed',    (SELECT jsonb_object_agg('k' || g, repeat('z', 3000)) || '{"type": "Big"}' FROM generate_series(1, 10) g)),
    ('euro',     'cancelled', jsonb_build_object('message', repeat('€', 10000)));
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT label, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('case', label), 'q_fmany_errcap', max_attempts => 3))
  FROM cases ORDER BY label;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_errcap'], max_tasks => 20);
CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many((SELECT id FROM w),
    (SELECT array_agg(o.task_id ORDER BY o.label) FROM o),
    (SELECT array_agg(1) FROM o),
    (SELECT array_agg(cases.outcome ORDER BY o.label) FROM o JOIN cases USING (label)),
    NULL,
    (SELECT array_agg(cases.err ORDER BY o.label) FROM o JOIN cases USING (label))) r;
CREATE TEMP TABLE stored AS
    SELECT o.label, a.error AS attempt_error, t.last_error AS task_error
      FROM o JOIN taskforge.attempts a USING (task_id) JOIN taskforge.tasks t USING (task_id);

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 8, 'every element with an odd or huge error is accepted');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'string'), '{"message": "boom"}'::jsonb, 'a JSON string error becomes {"message": ...}');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'array'), '{"message": [1, "two"]}'::jsonb, 'a JSON array error becomes {"message": [...]}');
SELECT ok((SELECT attempt_error IS NULL AND task_error IS NULL FROM stored WHERE label = 'jsonnull'), 'a JSON null error stores no error');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'small'), (SELECT err FROM cases WHERE label = 'small'), 'a small object error is stored unchanged');
SELECT is((SELECT count(*)::int FROM stored WHERE attempt_error IS DISTINCT FROM task_error), 0, 'each task stores the same error as its attempt');
SELECT is((SELECT length(attempt_error ->> 'message') FROM stored WHERE label = 'long'), 4000, 'a 100,000-character message is cut to 4,000 characters');
SELECT ok((SELECT attempt_error -> 'truncated' = 'true' AND attempt_error ->> 'type' = 'E' AND attempt_error -> 'code' = '7' FROM stored WHERE label = 'long'),
    'the capped error is marked truncated and keeps its short members');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'longtext'), jsonb_build_object('message', repeat('y', 4000), 'truncated', true),
    'a huge non-object error becomes a capped {"message": ...}');
SELECT is((SELECT array_agg(key ORDER BY key) FROM stored, jsonb_object_keys(attempt_error) key WHERE label = 'manykeys'),
    ARRAY['message', 'truncated', 'type'], 'an error still too big after cutting strings keeps only type, message, truncated');
SELECT is((SELECT attempt_error ->> 'message' FROM stored WHERE label = 'euro'), repeat('€', 4000), 'multi-byte text is cut by characters');
SELECT is((SELECT count(*)::int FROM stored WHERE octet_length(attempt_error::text) > 16384 OR jsonb_typeof(attempt_error) <> 'object'), 0,
    'every stored error is a JSON object of at most 16 KiB');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
