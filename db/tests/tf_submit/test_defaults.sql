-- tf_submit with only a task type stores the documented defaults: queue 'default', priority 0, 3 attempts, due now, QUEUED, no attempts.
BEGIN;
SELECT plan(24);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);

SELECT is((SELECT count(*)::int FROM s), 1, 'tf_submit returns one row');
SELECT is((SELECT state::text FROM s), 'QUEUED', 'the returned state is QUEUED');
SELECT is((SELECT created FROM s), true, 'the returned created flag is true');
SELECT is((SELECT count(*)::int FROM task), 1, 'the returned task_id names a stored task');
SELECT is((SELECT task_type FROM task), 'noop', 'the task type is stored');
SELECT is((SELECT payload::jsonb FROM task), '{}'::jsonb, 'payload defaults to {}');
SELECT is((SELECT queue::text FROM task), 'default', 'queue defaults to ''default''');
SELECT is((SELECT priority::int FROM task), 0, 'priority defaults to 0');
SELECT is((SELECT max_attempts::int FROM task), 3, 'max_attempts defaults to 3');
SELECT is((SELECT state::text FROM task), 'QUEUED', 'the stored task is QUEUED');
SELECT is((SELECT attempt_count FROM task), 0, 'attempt_count starts at 0');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN s USING (task_id)), 0, 'no attempt row exists before a claim');
SELECT ok((SELECT created_at >= (SELECT at FROM t0) AND created_at <= (SELECT at FROM t1) FROM task),
    'created_at is the database clock during the call');
SELECT is((SELECT scheduled_at FROM task), (SELECT created_at FROM task), 'a NULL schedule means due at creation');
SELECT is((SELECT updated_at FROM task), (SELECT created_at FROM task), 'updated_at starts equal to created_at');
SELECT ok((SELECT idempotency_key IS NULL AND fingerprint IS NULL FROM task), 'no key and no fingerprint without idempotency_key');
SELECT ok((SELECT owner_worker_id IS NULL AND lease_expires_at IS NULL FROM task), 'no owner and no lease');
SELECT ok((SELECT finished_at IS NULL AND result IS NULL AND last_error IS NULL FROM task), 'not finished, no result, no error');
SELECT ok((SELECT cancel_requested_at IS NULL AND cancel_reason IS NULL FROM task), 'no cancel request');

-- A payload is stored as given; every call creates a new task with a larger id.
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('echo', '{"n": 1, "nested": {"list": [1, "two", null]}}', 'q_submit_defaults');
CREATE TEMP TABLE s3 AS SELECT * FROM taskforge.tf_submit('echo', '{"n": 1, "nested": {"list": [1, "two", null]}}', 'q_submit_defaults');
SELECT is((SELECT payload::jsonb FROM taskforge.tasks JOIN s2 USING (task_id)), '{"n": 1, "nested": {"list": [1, "two", null]}}'::jsonb,
    'the payload is stored unchanged');
SELECT ok((SELECT task_id FROM s3) > (SELECT task_id FROM s2), 'an identical submit without a key creates a second task with a larger id');
SELECT is((SELECT created FROM s3), true, 'the second identical submit without a key reports created');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_defaults'), 2, 'two tasks exist in the queue');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
