-- tf_finalize refuses a wrong owner, a wrong or replaced attempt, an expired lease and a task that is not RUNNING: accepted=false, the reason, nothing changed.
BEGIN;
SELECT plan(30);

CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_finalize_guards_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_finalize_guards_2') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_guards', max_attempts => 5);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_finalize_guards'], 60);
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

-- Wrong owner.
CREATE TEMP TABLE f_owner AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w2), 1, 'succeeded', '{"r": 1}');
SELECT is((SELECT accepted FROM f_owner), false, 'another worker cannot finalize');
SELECT is((SELECT reason FROM f_owner), 'not_owner', 'reason not_owner');
SELECT is((SELECT task_state FROM f_owner), 'RUNNING', 'the returned task_state is the unchanged RUNNING');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task row is unchanged');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att x), 'the attempt row is unchanged');

-- Wrong attempt number (checked before the owner).
CREATE TEMP TABLE f_attempt AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w1), 2, 'failed');
SELECT is((SELECT accepted FROM f_attempt), false, 'the owner cannot finalize another attempt number');
SELECT is((SELECT reason FROM f_attempt), 'stale_attempt', 'reason stale_attempt');
CREATE TEMP TABLE f_both AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w2), 2, 'failed');
SELECT is((SELECT reason FROM f_both), 'stale_attempt', 'wrong attempt and wrong owner: stale_attempt is reported first');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task row is still unchanged');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att x), 'the attempt row is still unchanged');

-- Expired lease, not yet recovered.
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM s WHERE t.task_id = s.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN s USING (task_id) WHERE a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
CREATE TEMP TABLE snap_expired AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE snap_att_expired AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);
CREATE TEMP TABLE f_expired AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w1), 1, 'succeeded', '{"late": true}');
SELECT is((SELECT accepted FROM f_expired), false, 'the owner cannot finalize after its lease expired, even before recovery');
SELECT is((SELECT reason FROM f_expired), 'lease_expired', 'reason lease_expired');
SELECT is((SELECT task_state FROM f_expired), 'RUNNING', 'the task is still RUNNING until recovery');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_expired x), 'the task row is unchanged (no late result)');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att_expired x), 'the attempt is still RUNNING, unchanged');

-- Recovered and claimed by another worker: the old owner's call is stale.
CREATE TEMP TABLE rec AS SELECT * FROM taskforge.tf_recover(100000);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_finalize_guards'], 60);
SELECT is((SELECT attempt_number FROM c2), 2, 'the task runs again as attempt 2 under the other worker');
CREATE TEMP TABLE snap2 AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE f_replaced AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w1), 1, 'succeeded', '{"late": true}');
SELECT is((SELECT accepted FROM f_replaced), false, 'the replaced owner cannot finalize its old attempt');
SELECT is((SELECT reason FROM f_replaced), 'stale_attempt', 'reason stale_attempt');
CREATE TEMP TABLE f_replaced_new AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w1), 2, 'succeeded', '{"late": true}');
SELECT is((SELECT reason FROM f_replaced_new), 'not_owner', 'the replaced owner naming the new attempt gets not_owner');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap2 x), 'the new owner''s task is untouched');
SELECT is((SELECT a.state FROM taskforge.attempts a JOIN s USING (task_id) WHERE attempt_number = 1), 'ABANDONED',
    'the old attempt stays ABANDONED');
SELECT ok((SELECT a.result IS NULL FROM taskforge.attempts a JOIN s USING (task_id) WHERE attempt_number = 1),
    'the late result was not written to the old attempt');

-- Not running.
CREATE TEMP TABLE q AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_guards_queued');
CREATE TEMP TABLE snap_q AS SELECT t.* FROM taskforge.tasks t JOIN q USING (task_id);
CREATE TEMP TABLE f_queued AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM q), (SELECT id FROM w1), 1, 'succeeded');
SELECT is((SELECT accepted FROM f_queued), false, 'a QUEUED task cannot be finalized');
SELECT is((SELECT reason FROM f_queued), 'not_running', 'reason not_running');
SELECT is((SELECT task_state FROM f_queued), 'QUEUED', 'the returned task_state is QUEUED');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN q USING (task_id)), (SELECT x::text FROM snap_q x), 'the QUEUED task is unchanged');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN q USING (task_id)), 0, 'no attempt row was invented');

CREATE TEMP TABLE f_new AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w2), 2, 'succeeded', '{"r": 2}');
SELECT is((SELECT accepted FROM f_new), true, 'the current owner finalizes');
SELECT is((SELECT result FROM taskforge.tasks JOIN s USING (task_id)), '{"r": 2}'::jsonb, 'only the current owner''s result is stored');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
