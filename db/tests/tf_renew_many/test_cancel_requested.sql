-- tf_renew_many reports cancel_requested per element once tf_cancel was called for a running task, and still renews that lease so the handler can stop cleanly and finalize.
BEGIN;
SELECT plan(7);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_rmany_cancel') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_rmany_cancel')) AS task_id
  FROM generate_series(1, 3) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rmany_cancel'], 30, max_tasks => 10);
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k), ARRAY[1, 1, 1]);
SELECT is((SELECT array_agg(cancel_requested) FROM r1), ARRAY[false, false, false], 'before tf_cancel, no element reports a request');
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM k WHERE n = 2), 'operator stop');
SELECT is((SELECT task_state FROM x), 'RUNNING', 'tf_cancel leaves the running task RUNNING');
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k), ARRAY[1, 1, 1], 60);
SELECT is((SELECT array_agg(cancel_requested) FROM r2), ARRAY[false, true, false], 'only the cancelled task reports cancel_requested');
SELECT is((SELECT array_agg(renewed) FROM r2), ARRAY[true, true, true], 'every lease is still renewed');
SELECT ok((SELECT bool_and(r2.lease_expires_at > r1.lease_expires_at) FROM r1 JOIN r2 USING (task_id)), 'every deadline moved on');
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k), ARRAY[1, 1, 1],
                                                                ARRAY['retryable', 'retryable', 'succeeded']);
SELECT is((SELECT array_agg(task_state) FROM f), ARRAY['RETRYING', 'CANCELLED', 'SUCCEEDED'],
    'finalized: the cancelled task ends CANCELLED, the others as usual');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
