-- tf_submit's appended timeout_seconds: a per-task attempt timeout overriding the task type's (NULL keeps the type's), validated (0 < s <= 604800, TF400 naming it, nothing written), part of the idempotency fingerprint only when given (fingerprints without it are unchanged), and taken by tf_submit_many's requests too.
BEGIN;
SELECT plan(20);
SELECT taskforge.tf_register_task_type('tt_timed', timeout_seconds => 60);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_timeout') AS id;

CREATE TEMP TABLE t AS
SELECT 'own' AS k, (taskforge.tf_submit('noop', '{}', 'q_tt', timeout_seconds => 5)).task_id
UNION ALL SELECT 'type', (taskforge.tf_submit('tt_timed', '{}', 'q_tt2')).task_id
UNION ALL SELECT 'override', (taskforge.tf_submit('tt_timed', '{}', 'q_tt3', timeout_seconds => 2.5)).task_id
UNION ALL SELECT 'none', (taskforge.tf_submit('noop', '{}', 'q_tt4')).task_id;
SELECT is((SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t WHERE k = 'own')), 5::float8,
    'a task of a type without a timeout takes its own');
SELECT is((SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t WHERE k = 'type')), 60::float8,
    'NULL keeps the type''s');
SELECT is((SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t WHERE k = 'override')), 2.5::float8,
    'a task''s own overrides its type''s');
SELECT is((SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM t WHERE k = 'none')), NULL::float8,
    'neither: no deadline');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_tt3'], 30, 1);
SELECT is((SELECT t.deadline_at - a.started_at
             FROM taskforge.tasks t
             INNER JOIN taskforge.attempts a ON a.task_id = t.task_id
            WHERE t.task_id = (SELECT c.task_id FROM c)), interval '2.5 seconds', 'the claimed attempt''s deadline follows it');
SELECT is((SELECT lease_expires_at <= deadline_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM c)), true,
    'and the lease stops at the deadline');

-- Validation: nothing written.
CREATE TEMP TABLE before AS SELECT count(*) AS n FROM taskforge.tasks;
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', timeout_seconds => 0)$$, 'TF400',
    'timeout_seconds: must be greater than 0 and at most 604800 seconds, got 0', 'zero is TF400');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', timeout_seconds => 604801)$$, 'timeout_seconds: %', 'over 7 days is TF400');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', timeout_seconds => 'NaN')$$, 'timeout_seconds: %', 'NaN is TF400');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit('noop', timeout_seconds => '-Infinity')$$, 'timeout_seconds: %', '-Infinity is TF400');
SELECT is((SELECT count(*) FROM taskforge.tasks), (SELECT n FROM before), 'nothing was written');

-- Idempotency: the timeout is part of the request.
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_tt5', idempotency_key => 'tt-k1', timeout_seconds => 9)), true, 'first');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_tt5', idempotency_key => 'tt-k1', timeout_seconds => 9)), false,
    'the same request with the same timeout is a replay');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_tt5', idempotency_key => 'tt-k1', timeout_seconds => 10)$$,
    'TF409', NULL, 'another timeout is another request (TF409)');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_tt5', idempotency_key => 'tt-k1')$$,
    'TF409', NULL, 'and so is none');
SELECT is(taskforge._tf_fingerprint('noop', '{"a": 1}', 'q', 0, 3, NULL),
    sha256(convert_to(jsonb_build_array('tf1', 'noop', '{"a": 1}'::jsonb, 'q', 0, 3, NULL::text)::text, 'UTF8')),
    'without a timeout the fingerprint is the one of the original canonical form');

-- tf_submit_many.
CREATE TEMP TABLE m AS SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_tt6", "timeout_seconds": 7},
    {"task_type": "tt_timed", "queue": "q_tt6", "timeout_seconds": null}, {"task_type": "tt_timed", "queue": "q_tt6"}]');
SELECT is((SELECT array_agg(t.timeout_seconds ORDER BY m.task_id) FROM m JOIN taskforge.tasks t USING (task_id)),
    ARRAY[7, 60, 60]::float8[], 'tf_submit_many takes timeout_seconds; null or omitted is the type''s');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "timeout_seconds": "5"}]')$$, 'TF400',
    'requests[0].timeout_seconds: must be a JSON number, got "5"', 'a string is TF400');
SELECT throws_like($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "timeout_seconds": 1e400}]')$$,
    'requests[0].timeout_seconds: %', 'a number beyond double precision is TF400, not 22003');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "priority": 40000}]')$$, 'TF400',
    'requests[0].priority: must be between -32768 and 32767, got 40000', 'whole numbers get tf_submit''s messages');
SELECT * FROM finish();
ROLLBACK;
