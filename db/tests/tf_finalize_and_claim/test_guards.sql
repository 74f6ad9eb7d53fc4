-- tf_finalize_and_claim applies tf_finalize's guard per element: refused elements (not_found, not_running, stale_attempt, not_owner, lease_expired) change nothing and do not stop the accepted ones or the claim; an expired-lease task is not claimed by the call either (it is RUNNING until recovery).
BEGIN;
SELECT plan(8);

CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_fac_guards_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_fac_guards_2') AS id;
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT l, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('l', l), 'q_fac_guards_1', priority => 5, max_attempts => 5))
  FROM unnest(ARRAY['ok', 'stale', 'expired', 'done']) l;
INSERT INTO k SELECT 'owner', task_id FROM taskforge.tf_submit('noop', '{}', 'q_fac_guards_2');
INSERT INTO k SELECT 'missing', max(task_id) + 1000000 FROM taskforge.tasks;
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_fac_guards_1'], 60, max_tasks => 10);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_fac_guards_2'], 60);
CREATE TEMP TABLE fd AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM k WHERE label = 'done'), (SELECT id FROM w1), 1, 'succeeded');
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM k WHERE k.label = 'expired' AND t.task_id = k.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired' AND a.task_id = t.task_id AND a.attempt_number = t.attempt_count;
-- Queued tasks to claim; 'queued' is also named in the batch (not_running) and may then be claimed.
INSERT INTO k SELECT 'queued', task_id FROM taskforge.tf_submit('noop', '{"l": "queued"}', 'q_fac_guards_1', priority => 1);

CREATE TEMP TABLE b (pos int, label text, attempt_number int);
INSERT INTO b VALUES (1, 'missing', 1), (2, 'queued', 1), (3, 'stale', 2), (4, 'owner', 1), (5, 'expired', 1), (6, 'done', 1), (7, 'ok', 1);
CREATE TEMP TABLE refused AS SELECT k.* FROM k WHERE k.label IN ('stale', 'owner', 'expired', 'done');
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN refused USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN refused USING (task_id);

CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_finalize_and_claim((SELECT id FROM w1),
    (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (label)),
    (SELECT array_agg(b.attempt_number ORDER BY b.pos) FROM b),
    (SELECT array_agg('succeeded'::text) FROM b),
    (SELECT array_agg(jsonb_build_object('from', b.label) ORDER BY b.pos) FROM b),
    queues => ARRAY['q_fac_guards_1'], max_tasks => 10)
    WITH ORDINALITY x(kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload, queue, priority,
                         max_attempts, lease_expires_at, timeout_seconds, traceparent, pos);

SELECT results_eq($$SELECT r.pos, r.kind, k.label, r.accepted, r.task_state, r.reason FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
                  $$VALUES (1::bigint, 'finalized'::text, 'missing'::text, false, NULL::text, 'not_found'::text),
                           (2, 'finalized', 'queued', false, 'QUEUED', 'not_running'),
                           (3, 'finalized', 'stale', false, 'RUNNING', 'stale_attempt'),
                           (4, 'finalized', 'owner', false, 'RUNNING', 'not_owner'),
                           (5, 'finalized', 'expired', false, 'RUNNING', 'lease_expired'),
                           (6, 'finalized', 'done', false, 'SUCCEEDED', 'not_running'),
                           (7, 'finalized', 'ok', true, 'SUCCEEDED', NULL),
                           (8, 'claimed', 'queued', NULL, NULL, NULL)$$,
                  'each refused element reports its reason; the accepted one is finalized; then the claim takes the only due QUEUED task');
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'the refused tasks are unchanged (the expired one was not claimed again)');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id, a.attempt_number) FROM taskforge.attempts a JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id, x.attempt_number) FROM snap_att x), 'their attempts are unchanged');
SELECT is((SELECT t.result FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'ok'), '{"from": "ok"}'::jsonb, 'the accepted element''s result is stored');
SELECT ok((SELECT t.result IS NULL FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'queued'),
    'the QUEUED element got no result from the refused finalize');
SELECT is((SELECT t.state || '/' || t.attempt_count FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'queued'), 'RUNNING/1',
    'and was claimed by the same call as attempt 1');
SELECT is((SELECT count(*)::int FROM r WHERE kind = 'claimed'), 1, 'nothing else was claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
