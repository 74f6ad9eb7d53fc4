-- tf_renew_many applies tf_renew's guard per element: in one mixed batch the owned leases are renewed and every other element is refused with its reason (not_found, not_running, stale_attempt, not_owner, lease_expired), no deadline, nothing changed.
BEGIN;
SELECT plan(19);

CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_rmany_guards_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_rmany_guards_2') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT l, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('l', l), 'q_rmany_guards_1', max_attempts => 5))
  FROM unnest(ARRAY['ok_a', 'ok_b', 'stale', 'expired', 'done']) l;
INSERT INTO k SELECT 'owner', task_id FROM taskforge.tf_submit('noop', '{}', 'q_rmany_guards_2', max_attempts => 5);
INSERT INTO k SELECT 'queued', task_id FROM taskforge.tf_submit('noop', '{}', 'q_rmany_guards_q');
INSERT INTO k SELECT 'missing', max(task_id) + 1000000 FROM taskforge.tasks;
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_rmany_guards_1'], 60, max_tasks => 10);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_rmany_guards_2'], 60);
CREATE TEMP TABLE fd AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM k WHERE label = 'done'), (SELECT id FROM w1), 1, 'succeeded');
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM k WHERE k.label = 'expired' AND t.task_id = k.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired' AND a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
-- A cancel request on one refused element: reported even though refused.
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM k WHERE label = 'owner'), 'stop');

CREATE TEMP TABLE b (pos int, label text, attempt_number int);
INSERT INTO b VALUES (1, 'ok_b', 1), (2, 'missing', 1), (3, 'queued', 1), (4, 'stale', 2), (5, 'owner', 1),
                     (6, 'expired', 1), (7, 'done', 1), (8, 'ok_a', 1);
CREATE TEMP TABLE refused AS SELECT k.* FROM k JOIN b USING (label) WHERE b.label NOT IN ('ok_a', 'ok_b');
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN refused USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN refused USING (task_id);

CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_renew_many((SELECT id FROM w1),
    (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (label)),
    (SELECT array_agg(b.attempt_number ORDER BY b.pos) FROM b), 600)
    WITH ORDINALITY x(task_id, attempt_number, renewed, lease_expires_at, cancel_requested, reason, pos);

SELECT results_eq(
    $$SELECT r.pos, k.label, r.attempt_number, r.renewed, r.lease_expires_at IS NOT NULL, r.cancel_requested, r.reason FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
    $$VALUES (1::bigint, 'ok_b'::text, 1, true, true, false, NULL::text),
             (2, 'missing', 1, false, false, NULL, 'not_found'),
             (3, 'queued', 1, false, false, false, 'not_running'),
             (4, 'stale', 2, false, false, false, 'stale_attempt'),
             (5, 'owner', 1, false, false, true, 'not_owner'),
             (6, 'expired', 1, false, false, false, 'lease_expired'),
             (7, 'done', 1, false, false, false, 'not_running'),
             (8, 'ok_a', 1, true, true, false, NULL)$$,
    'one row per element in input order: renewed with a deadline, or refused with its reason and no deadline; cancel_requested NULL only for a missing task');
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'the refused tasks are unchanged');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id, a.attempt_number) FROM taskforge.attempts a JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id, x.attempt_number) FROM snap_att x), 'their attempts are unchanged');
SELECT ok((SELECT t.state = 'QUEUED' AND t.owner_worker_id IS NULL AND t.lease_expires_at IS NULL FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'queued'),
    'the QUEUED task got no owner and no lease');
SELECT ok((SELECT t.lease_expires_at < clock_timestamp() FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired'),
    'an expired lease is not revived');
SELECT is((SELECT count(*)::int FROM r JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)
            WHERE r.renewed AND t.lease_expires_at = r.lease_expires_at AND a.lease_expires_at = r.lease_expires_at), 2,
    'the two owned leases moved (task and attempt)');

-- Both wrong attempt and wrong owner: stale_attempt first (as the guard orders them).
SELECT is((SELECT reason FROM taskforge.tf_renew_many((SELECT id FROM w1), ARRAY[(SELECT task_id FROM k WHERE label = 'owner')], ARRAY[2])),
    'stale_attempt', 'wrong attempt and wrong owner: stale_attempt');
SELECT is((SELECT reason FROM taskforge.tf_renew_many(gen_random_uuid(), ARRAY[(SELECT task_id FROM k WHERE label = 'ok_a')], ARRAY[1])),
    'not_owner', 'an unknown worker id is refused by the guard (not_owner), not an error');

-- Recovered and claimed by w2: the old owner's renewals are refused, the new owner's accepted.
CREATE TEMP TABLE rec AS SELECT * FROM taskforge.tf_recover(100000);
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_rmany_guards_1'], 60);
SELECT is((SELECT attempt_number FROM c3), 2, 'the expired task was recovered and claimed again as attempt 2');
CREATE TEMP TABLE snap2 AS SELECT t.* FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired';
SELECT is((SELECT reason FROM taskforge.tf_renew_many((SELECT id FROM w1), ARRAY[(SELECT task_id FROM k WHERE label = 'expired')], ARRAY[1])),
    'stale_attempt', 'the replaced owner renewing its old attempt: stale_attempt');
SELECT is((SELECT reason FROM taskforge.tf_renew_many((SELECT id FROM w1), ARRAY[(SELECT task_id FROM k WHERE label = 'expired')], ARRAY[2])),
    'not_owner', 'the replaced owner naming the new attempt: not_owner');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired'), (SELECT x::text FROM snap2 x),
    'the new owner''s lease is untouched');
SELECT is((SELECT a.lease_expires_at < clock_timestamp() FROM taskforge.attempts a JOIN k USING (task_id) WHERE k.label = 'expired' AND a.attempt_number = 1),
    true, 'the abandoned attempt keeps its old deadline');
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w2),
    ARRAY[(SELECT task_id FROM k WHERE label = 'owner'), (SELECT task_id FROM k WHERE label = 'expired')], ARRAY[1, 2], 120);
SELECT is((SELECT array_agg(renewed) FROM r2), ARRAY[true, true], 'the new owner renews both of its attempts');
SELECT is((SELECT array_agg(cancel_requested) FROM r2), ARRAY[true, false], 'cancel_requested is per element');

-- Finished by the owner: a later renewal is not_running.
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w1),
    ARRAY[(SELECT task_id FROM k WHERE label = 'ok_a'), (SELECT task_id FROM k WHERE label = 'ok_b')], ARRAY[1, 1], ARRAY['succeeded', 'failed']);
SELECT is((SELECT array_agg(reason) FROM taskforge.tf_renew_many((SELECT id FROM w1),
    ARRAY[(SELECT task_id FROM k WHERE label = 'ok_a'), (SELECT task_id FROM k WHERE label = 'ok_b')], ARRAY[1, 1])),
    ARRAY['not_running', 'not_running'], 'renewing finished attempts: not_running');
SELECT ok((SELECT bool_and(t.lease_expires_at IS NULL AND t.owner_worker_id IS NULL) FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label IN ('ok_a', 'ok_b')),
    'the finished tasks got no lease back');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.state = 'RUNNING'), 3, 'stale, owner and expired are still RUNNING');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
