-- tf_finalize's error_text stores any text as {"message": error_text} (capped like error), so a caller that cannot build valid jsonb (the issue's "\u0000" escape) still finalizes; error and error_text together are TF400; what cannot be text at all never reaches the function.
BEGIN;
SELECT plan(13);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_error_text') AS id;
CREATE TEMP TABLE cases (label text PRIMARY KEY, outcome text, txt text);
INSERT INTO cases VALUES
    ('escape',   'failed',    'bad\u0000byte'),                     -- standard string: six characters, no NUL
    ('control',  'retryable', E'tab\there "quoted" back\\slash\nline\x01'),
    ('unicode',  'failed',    'caf' || chr(233) || ' ' || chr(128512) || ' ' || chr(65535)),
    ('long',     'cancelled', repeat('€', 100000)),
    ('success',  'succeeded', 'ignored on success');
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT label, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('case', label), 'q_finalize_error_text'))
  FROM cases ORDER BY label;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_error_text'], max_tasks => 10);
CREATE TEMP TABLE f AS
    SELECT cases.label, r.* FROM cases JOIN o USING (label),
           LATERAL taskforge.tf_finalize(task_id => o.task_id, worker_id => (SELECT id FROM w), attempt_number => 1,
                                         outcome => cases.outcome, error_text => cases.txt) r;
CREATE TEMP TABLE stored AS
    SELECT o.label, a.error AS attempt_error, t.last_error AS task_error, t.state
      FROM o JOIN taskforge.attempts a USING (task_id) JOIN taskforge.tasks t USING (task_id);

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 5, 'every finalize with error_text is accepted');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'escape'), jsonb_build_object('message', 'bad\u0000byte'),
    'the issue''s text is stored as {"message": ...}');
SELECT is((SELECT attempt_error ->> 'message' FROM stored WHERE label = 'escape'), 'bad' || chr(92) || 'u0000byte',
    'a \u0000 escape in error_text is kept as its six characters, not turned into NUL');
SELECT is((SELECT attempt_error ->> 'message' FROM stored WHERE label = 'control'), (SELECT txt FROM cases WHERE label = 'control'),
    'quotes, backslashes and control characters come back exactly');
SELECT is((SELECT attempt_error ->> 'message' FROM stored WHERE label = 'unicode'), (SELECT txt FROM cases WHERE label = 'unicode'),
    'non-ASCII characters, a non-BMP character and a noncharacter come back exactly');
SELECT is((SELECT state FROM stored WHERE label = 'control'), 'RETRYING', 'the outcome is applied as with error');
SELECT is((SELECT attempt_error FROM stored WHERE label = 'long'), jsonb_build_object('message', repeat('€', 4000), 'truncated', true),
    'a 100,000-character error_text is capped like error (4,000 characters, truncated)');
SELECT ok((SELECT octet_length(attempt_error::text) <= 16384 FROM stored WHERE label = 'long'), 'and stays within 16 KiB');
SELECT ok((SELECT attempt_error IS NULL AND task_error IS NULL FROM stored WHERE label = 'success'),
    'error_text is ignored for succeeded, like error');
SELECT is((SELECT count(*)::int FROM stored WHERE attempt_error IS DISTINCT FROM task_error AND label <> 'success'), 0,
    'the task stores the same error as its attempt');

-- Both forms at once: refused, nothing written.
CREATE TEMP TABLE t2 AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_finalize_error_text_both');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_error_text_both']);
SELECT throws_like(format($$SELECT * FROM taskforge.tf_finalize(task_id => %s, worker_id => %L, attempt_number => 1,
        outcome => 'failed', error => '{"message": "m"}', error_text => 'm')$$, (SELECT task_id FROM t2), (SELECT id FROM w)),
    'error_text: give error or error_text, not both', 'error and error_text together are TF400 naming error_text');

-- What never reaches the function: jsonb input with \u0000 (the issue), and a NUL in text.
SELECT throws_ok($$SELECT '{"message": "bad\u0000byte"}'::jsonb$$, '22P05', NULL,
    'the same text as jsonb fails in the jsonb parser (22P05), before tf_finalize could run');
SELECT throws_ok($$SELECT chr(0)$$, '54000', NULL, 'text cannot hold U+0000 at all');
SELECT * FROM finish();
ROLLBACK;
