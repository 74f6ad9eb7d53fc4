-- tf_renew by the owner under the current attempt moves the lease to now + lease_seconds on the task and the attempt together.
BEGIN;
SELECT plan(15);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_renew_extend') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_renew_extend');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_renew_extend'], 30);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM c), (SELECT id FROM w), 1, 120);
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
SELECT is((SELECT count(*)::int FROM r1), 1, 'tf_renew returns one row');
SELECT is((SELECT renewed FROM r1), true, 'the owner renews its lease');
SELECT ok((SELECT lease_expires_at BETWEEN (SELECT at FROM t0) + interval '120 seconds' AND (SELECT at FROM t1) + interval '120 seconds' FROM r1),
    'the new deadline is database time at the call + 120 s');
SELECT ok((SELECT r1.lease_expires_at > c.lease_expires_at FROM r1, c), 'the lease moved later than the claim''s 30 s lease');
SELECT is((SELECT cancel_requested FROM r1), false, 'no cancel requested');
SELECT is((SELECT lease_expires_at FROM taskforge.tasks JOIN s USING (task_id)), (SELECT lease_expires_at FROM r1),
    'the task row carries the new deadline');
SELECT is((SELECT lease_expires_at FROM taskforge.attempts JOIN s USING (task_id)), (SELECT lease_expires_at FROM r1),
    'the attempt row carries the new deadline');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN s USING (task_id)), 'RUNNING', 'the task stays RUNNING');
SELECT is((SELECT owner_worker_id FROM taskforge.tasks JOIN s USING (task_id)), (SELECT id FROM w), 'the owner is unchanged');
SELECT is((SELECT attempt_count FROM taskforge.tasks JOIN s USING (task_id)), 1, 'no attempt was added');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN s USING (task_id)), 1, 'still one attempt row');

-- The deadline is always now + lease_seconds: a shorter lease moves it earlier; the default is 30 s.
CREATE TEMP TABLE t2 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM c), (SELECT id FROM w), 1, 5);
CREATE TEMP TABLE t3 AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT renewed AND lease_expires_at BETWEEN (SELECT at FROM t2) + interval '5 seconds' AND (SELECT at FROM t3) + interval '5 seconds' FROM r2),
    'a 5 s renewal sets the deadline to now + 5 s, earlier than before');
CREATE TEMP TABLE t4 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM c), (SELECT id FROM w), 1);
CREATE TEMP TABLE t5 AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT renewed AND lease_expires_at BETWEEN (SELECT at FROM t4) + interval '30 seconds' AND (SELECT at FROM t5) + interval '30 seconds' FROM r3),
    'the default lease_seconds is 30');
SELECT is((SELECT lease_expires_at FROM taskforge.attempts JOIN s USING (task_id)), (SELECT lease_expires_at FROM r3),
    'the attempt row follows every renewal');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
