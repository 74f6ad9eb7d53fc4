-- tf_renew refuses (renewed = false, no deadline, nothing changed) a wrong owner, a wrong or replaced attempt, an expired lease before recovery, and a task that is not RUNNING.
BEGIN;
SELECT plan(26);

CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_renew_guards_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_renew_guards_2') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_renew_guards', max_attempts => 5);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_renew_guards'], 60);
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

-- Wrong owner.
CREATE TEMP TABLE r_owner AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w2), 1, 300);
SELECT is((SELECT renewed FROM r_owner), false, 'another worker cannot renew the lease');
SELECT ok((SELECT lease_expires_at IS NULL FROM r_owner), 'a refused renewal returns no deadline');
SELECT is((SELECT taskforge._tf_guard(t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at, (SELECT id FROM w2), 1, clock_timestamp())
             FROM taskforge.tasks t JOIN s USING (task_id)), 'not_owner', 'the guard reason is not_owner');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task row is unchanged');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att x), 'the attempt row is unchanged');

-- Wrong attempt number.
CREATE TEMP TABLE r_attempt AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w1), 2, 300);
SELECT is((SELECT renewed FROM r_attempt), false, 'the owner cannot renew under another attempt number');
SELECT is((SELECT taskforge._tf_guard(t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at, (SELECT id FROM w1), 2, clock_timestamp())
             FROM taskforge.tasks t JOIN s USING (task_id)), 'stale_attempt', 'the guard reason is stale_attempt');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task row is unchanged');

-- Expired lease, not yet recovered.
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM s WHERE t.task_id = s.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN s USING (task_id) WHERE a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
CREATE TEMP TABLE snap_expired AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE r_expired AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w1), 1, 300);
SELECT is((SELECT renewed FROM r_expired), false, 'the owner cannot renew an expired lease, even before recovery');
SELECT is((SELECT taskforge._tf_guard(t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at, (SELECT id FROM w1), 1, clock_timestamp())
             FROM taskforge.tasks t JOIN s USING (task_id)), 'lease_expired', 'the guard reason is lease_expired');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_expired x),
    'the expired task row is unchanged (still RUNNING with its old deadline)');
SELECT is((SELECT a.state FROM taskforge.attempts a JOIN s USING (task_id)), 'RUNNING', 'the attempt is still RUNNING');

-- Recovery and a new claim by another worker: the old owner's attempt is stale.
CREATE TEMP TABLE rec AS SELECT * FROM taskforge.tf_recover(100000);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_renew_guards'], 60);
SELECT is((SELECT attempt_number FROM c2), 2, 'the task was recovered and claimed again as attempt 2');
CREATE TEMP TABLE snap2 AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE r_replaced AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w1), 1, 300);
SELECT is((SELECT renewed FROM r_replaced), false, 'the replaced owner cannot renew its old attempt');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap2 x),
    'the new owner''s lease is untouched');
CREATE TEMP TABLE r_new_wrong AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w1), 2, 300);
SELECT is((SELECT renewed FROM r_new_wrong), false, 'the old owner cannot renew the new attempt either');
CREATE TEMP TABLE r_new AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w2), 2, 300);
SELECT is((SELECT renewed FROM r_new), true, 'the new owner renews its attempt');
SELECT is((SELECT a.lease_expires_at FROM taskforge.attempts a JOIN s USING (task_id) WHERE attempt_number = 1),
    (SELECT lease_expires_at FROM snap_expired), 'the abandoned attempt keeps its old deadline');

-- Not running: finished and queued tasks.
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w2), 2, 'succeeded');
SELECT is((SELECT task_state FROM f), 'SUCCEEDED', 'the task succeeded');
CREATE TEMP TABLE snap_done AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE r_done AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w2), 2, 300);
SELECT is((SELECT renewed FROM r_done), false, 'a finished task cannot be renewed by its last owner');
SELECT ok((SELECT lease_expires_at IS NULL FROM r_done), 'no deadline is returned');
SELECT is((SELECT taskforge._tf_guard(t.state, t.attempt_count, t.owner_worker_id, t.deadline_at, t.lease_expires_at, (SELECT id FROM w2), 2, clock_timestamp())
             FROM taskforge.tasks t JOIN s USING (task_id)), 'not_running', 'the guard reason is not_running');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_done x), 'the finished task is unchanged');
CREATE TEMP TABLE q AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_renew_guards_queued');
SELECT is((SELECT renewed FROM taskforge.tf_renew((SELECT task_id FROM q), (SELECT id FROM w1), 1, 300)), false,
    'a QUEUED task cannot be renewed');
SELECT ok((SELECT t.state = 'QUEUED' AND t.lease_expires_at IS NULL AND t.owner_worker_id IS NULL FROM taskforge.tasks t JOIN q USING (task_id)),
    'the QUEUED task got no owner and no lease');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
