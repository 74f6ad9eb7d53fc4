-- tf_renew_many moves every owned lease (task and attempt) to now + lease_seconds in one statement and returns one row per element in input order, with the attempt number, the new deadline and cancel_requested.
BEGIN;
SELECT plan(14);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_rmany_extend') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_rmany_extend')) AS task_id
  FROM generate_series(1, 4) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rmany_extend'], 10, max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c), 4, 'setup: four tasks are running with 10 s leases');
CREATE TEMP TABLE before_call AS SELECT clock_timestamp() AS at;

CREATE TEMP TABLE b (pos int, n int);
INSERT INTO b VALUES (1, 3), (2, 1), (3, 4), (4, 2);
CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (n)),
                                        ARRAY[1, 1, 1, 1], 300)
    WITH ORDINALITY x(task_id, attempt_number, renewed, lease_expires_at, cancel_requested, reason, pos);
CREATE TEMP TABLE after_call AS SELECT clock_timestamp() AS at;

SELECT results_eq($$SELECT k.n, r.attempt_number, r.renewed, r.cancel_requested, r.reason FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
                  $$VALUES (3, 1, true, false, NULL::text), (1, 1, true, false, NULL), (4, 1, true, false, NULL), (2, 1, true, false, NULL)$$,
                  'one renewed row per element, in input order');
SELECT is((SELECT count(DISTINCT lease_expires_at)::int FROM r), 1, 'one deadline for the whole batch');
SELECT ok((SELECT bool_and(lease_expires_at BETWEEN (SELECT at FROM before_call) + interval '300 seconds'
                                                AND (SELECT at FROM after_call) + interval '300 seconds') FROM r),
    'the deadline is the database clock during the call + 300 s');
SELECT ok((SELECT bool_and(r.lease_expires_at > c.lease_expires_at) FROM r JOIN c USING (task_id)), 'every deadline moved on');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.tasks t USING (task_id) WHERE t.lease_expires_at = r.lease_expires_at), 4,
    'the tasks carry the new deadline');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.attempts a USING (task_id) WHERE a.lease_expires_at = r.lease_expires_at), 4,
    'the attempts carry the new deadline');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.tasks t USING (task_id)
            WHERE t.state = 'RUNNING' AND t.owner_worker_id = (SELECT id FROM w) AND t.attempt_count = 1), 4,
    'the tasks stay RUNNING under the same owner and attempt');

-- Default lease (30 s) and a fractional one.
CREATE TEMP TABLE r30 AS SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2), ARRAY[1, 1]);
SELECT ok((SELECT bool_and(lease_expires_at BETWEEN clock_timestamp() + interval '29 seconds' AND clock_timestamp() + interval '30 seconds') FROM r30),
    'lease_seconds defaults to 30');
SELECT ok((SELECT bool_and(t.lease_expires_at = r30.lease_expires_at) FROM r30 JOIN taskforge.tasks t USING (task_id)),
    'a shorter lease is stored too (renew sets the deadline, it does not only extend it)');
CREATE TEMP TABLE rhalf AS SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT task_id FROM k WHERE n = 3)], ARRAY[1], 0.5);
SELECT ok((SELECT lease_expires_at BETWEEN clock_timestamp() AND clock_timestamp() + interval '0.5 seconds' FROM rhalf),
    'a fractional lease (0.5 s) is honoured');
SELECT is((SELECT renewed FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT task_id FROM k WHERE n = 4)], ARRAY[1], 86400)), true,
    'lease_seconds 86400 is accepted');

-- Still finalizable afterwards.
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id) FROM k), ARRAY[1, 1, 1, 1],
                                                               ARRAY['succeeded', 'succeeded', 'succeeded', 'succeeded']) WHERE accepted), 4,
    'the renewed attempts are finalized');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
