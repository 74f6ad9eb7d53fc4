-- tf_finalize stores worker errors safely: a non-object becomes {"message": ...}, JSON null is no error, and errors over 16 KiB are capped (strings cut to 4,000 characters, marked truncated).
BEGIN;
SELECT plan(20);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_errcap') AS id;
CREATE TEMP TABLE cases (label text PRIMARY KEY, outcome text, err jsonb);
INSERT INTO cases VALUES
    ('string',   'failed',    '"boom"'),
    ('array',    'failed',    '[1, "two"]'),
    ('number',   'failed',    '42'),
    ('jsonnull', 'failed',    'null'),
    ('sqlnull',  'failed',    NULL),
    ('small',    'failed',    '{"type": "KeyError", "message": "k", "detail": {"a": [1, 2]}}'),
    ('long',     'retryable', jsonb_build_object('type', 'E', 'message', repeat('x', 100000), 'code', 7)),
    ('longtext', 'failed',    to_jsonb(repeat('y', 50000))),
    ('manykeys', 'failed',    (SELECT jsonb_object_agg('k' || g, repeat('z', 3000)) || '{"type": "Big"}' FROM generate_series(1, 10) g)),
    ('nested',   'failed',    jsonb_build_object('message', 'm', 'detail', jsonb_build_object('blob', repeat('b', 50000)))),
    ('euro',     'cancelled', jsonb_build_object('message', repeat('€', 10000)));
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT label, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('case', label), 'q_finalize_errcap', max_attempts => 3))
  FROM cases ORDER BY label;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_errcap'], max_tasks => 20);
CREATE TEMP TABLE f AS
    SELECT cases.label, r.* FROM cases JOIN o USING (label),
           LATERAL taskforge.tf_finalize(o.task_id, (SELECT id FROM w), 1, cases.outcome, NULL, cases.err) r;
CREATE TEMP TABLE stored AS
    SELECT o.label, a.error AS attempt_error, t.last_error AS task_error
      FROM o JOIN taskforge.attempts a USING (task_id) JOIN taskforge.tasks t USING (task_id);

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 11, 'every finalize with an odd or huge error is accepted');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'string'), '{"message": "boom"}'::jsonb, 'a JSON string error becomes {"message": ...}');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'array'), '{"message": [1, "two"]}'::jsonb, 'a JSON array error becomes {"message": [...]}');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'number'), '{"message": 42}'::jsonb, 'a JSON number error becomes {"message": 42}');
SELECT ok((SELECT attempt_error IS NULL AND task_error IS NULL FROM stored WHERE label = 'jsonnull'), 'a JSON null error stores no error');
SELECT ok((SELECT attempt_error IS NULL AND task_error IS NULL FROM stored WHERE label = 'sqlnull'), 'a NULL error stores no error');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'small'), (SELECT err FROM cases WHERE label = 'small'), 'a small object error is stored unchanged');
SELECT is((SELECT count(*)::int FROM stored WHERE attempt_error IS DISTINCT FROM task_error), 0, 'the task stores the same error as its attempt');

SELECT is((SELECT length(attempt_error ->> 'message') FROM stored WHERE label = 'long'), 4000, 'a 100,000-character message is cut to 4,000 characters');
SELECT is((SELECT attempt_error -> 'truncated' FROM stored WHERE label = 'long'), 'true'::jsonb, 'the capped error is marked truncated');
SELECT ok((SELECT attempt_error ->> 'type' = 'E' AND attempt_error -> 'code' = '7' FROM stored WHERE label = 'long'), 'short members are kept');
SELECT is((SELECT f.task_state FROM f WHERE f.label = 'long'), 'RETRYING', 'a retryable failure with a huge error is still RETRYING');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'longtext'), jsonb_build_object('message', repeat('y', 4000), 'truncated', true),
    'a huge non-object error becomes a capped {"message": ...}');
SELECT is((SELECT array_agg(k ORDER BY k) FROM stored, jsonb_object_keys(attempt_error) k WHERE label = 'manykeys'),
    ARRAY['message', 'truncated', 'type'], 'an error still too big after cutting strings keeps only type, message, truncated');
SELECT is((SELECT attempt_error ->> 'type' FROM stored WHERE label = 'manykeys'), 'Big', 'its type is kept');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'nested'), '{"type": "error", "message": "m", "truncated": true}'::jsonb,
    'a huge nested member is dropped, the message kept');
SELECT is((SELECT attempt_error ->> 'message' FROM stored WHERE label = 'euro'), repeat('€', 4000), 'multi-byte text is cut by characters');
SELECT is((SELECT count(*)::int FROM stored WHERE octet_length(attempt_error::text) > 16384), 0, 'no stored error is over 16 KiB');
SELECT is((SELECT count(*)::int FROM stored WHERE attempt_error IS NOT NULL AND jsonb_typeof(attempt_error) <> 'object'), 0,
    'every stored error is a JSON object');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
