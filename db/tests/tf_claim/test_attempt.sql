-- tf_claim makes the task RUNNING under the caller with lease = now + lease_seconds and inserts attempt 1 RUNNING with the same lease.
BEGIN;
SELECT plan(22);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_attempt') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('echo', '{"k": "v"}', 'q_claim_attempt', 7, 4);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_attempt'], 45.5);
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

SELECT is((SELECT count(*)::int FROM c), 1, 'one row is returned');
SELECT is((SELECT task_id FROM c), (SELECT task_id FROM s), 'the row names the task');
SELECT is((SELECT attempt_number::int FROM c), 1, 'the first claim is attempt 1');
SELECT is((SELECT task_type FROM c), 'echo', 'task_type is returned');
SELECT is((SELECT payload::jsonb FROM c), '{"k": "v"}'::jsonb, 'payload is returned');
SELECT is((SELECT queue::text FROM c), 'q_claim_attempt', 'queue is returned');
SELECT is((SELECT priority::int FROM c), 7, 'priority is returned');
SELECT is((SELECT max_attempts::int FROM c), 4, 'max_attempts is returned');
SELECT ok((SELECT lease_expires_at BETWEEN (SELECT at FROM t0) + interval '45.5 seconds' AND (SELECT at FROM t1) + interval '45.5 seconds' FROM c),
    'lease_expires_at is database time at the call + 45.5 s');

SELECT is((SELECT state::text FROM task), 'RUNNING', 'the task is RUNNING');
SELECT is((SELECT owner_worker_id FROM task), (SELECT id FROM w), 'the caller owns the task');
SELECT is((SELECT lease_expires_at FROM task), (SELECT lease_expires_at FROM c), 'the task lease is the returned lease');
SELECT is((SELECT attempt_count FROM task), 1, 'attempt_count is 1');
SELECT ok((SELECT updated_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM task), 'updated_at is the time of the claim');

SELECT is((SELECT count(*)::int FROM att), 1, 'one attempt row exists');
SELECT is((SELECT attempt_number::int FROM att), 1, 'it is attempt 1');
SELECT is((SELECT state::text FROM att), 'RUNNING', 'the attempt is RUNNING');
SELECT is((SELECT worker_id FROM att), (SELECT id FROM w), 'the attempt names the worker');
SELECT is((SELECT lease_expires_at FROM att), (SELECT lease_expires_at FROM c), 'the attempt carries the same lease');
SELECT is((SELECT lease_expires_at - started_at FROM att), interval '45.5 seconds', 'the lease starts when the attempt starts');
SELECT ok((SELECT finished_at IS NULL AND outcome IS NULL AND result IS NULL AND error IS NULL FROM att),
    'the attempt has no finish, outcome, result or error yet');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
