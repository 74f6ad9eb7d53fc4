-- tf_renew reports cancel_requested once tf_cancel was called for the running task, and still renews the lease.
BEGIN;
SELECT plan(9);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_renew_cancel') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_renew_cancel_other') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_renew_cancel');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_renew_cancel'], 30);

CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 30);
SELECT is((SELECT cancel_requested FROM r1), false, 'before tf_cancel, renew reports no cancel request');
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM s), 'operator stop');
SELECT is((SELECT task_state FROM x), 'RUNNING', 'tf_cancel leaves the running task RUNNING');
SELECT is((SELECT cancel_requested FROM x), true, 'tf_cancel records the request');
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w), 1, 60);
SELECT is((SELECT cancel_requested FROM r2), true, 'after tf_cancel, renew reports cancel_requested');
SELECT is((SELECT renewed FROM r2), true, 'the lease is still renewed so the handler can stop cleanly');
SELECT ok((SELECT r2.lease_expires_at > r1.lease_expires_at FROM r1, r2), 'the deadline moved on');
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_renew((SELECT task_id FROM s), (SELECT id FROM w2), 1, 60);
SELECT is((SELECT renewed FROM r3), false, 'another worker still cannot renew');
SELECT is((SELECT cancel_requested FROM r3), true, 'a refused renewal also reports the cancel request');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
