-- tf_finalize_many applies tf_finalize's guard per element: in one mixed batch, the owned elements are accepted and every other element is refused with its own reason (not_found, not_running, stale_attempt, not_owner, lease_expired), changing nothing.
BEGIN;
SELECT plan(28);

CREATE TEMP TABLE w1 AS SELECT taskforge.tf_register_worker('w_fmany_guards_1') AS id;
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_fmany_guards_2') AS id;
-- One task per label; the labels in queue ..._1 are claimed by w1, 'owner' by w2, 'queued' by nobody.
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT l, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('l', l), 'q_fmany_guards_1', max_attempts => 5))
  FROM unnest(ARRAY['ok_a', 'ok_b', 'stale', 'expired', 'done']) l;
INSERT INTO k SELECT 'owner', task_id FROM taskforge.tf_submit('noop', '{}', 'q_fmany_guards_2', max_attempts => 5);
INSERT INTO k SELECT 'queued', task_id FROM taskforge.tf_submit('noop', '{}', 'q_fmany_guards_q');
INSERT INTO k SELECT 'missing', max(task_id) + 1000000 FROM taskforge.tasks;
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w1), ARRAY['q_fmany_guards_1'], 60, max_tasks => 10);
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_fmany_guards_2'], 60);
SELECT is((SELECT count(*)::int FROM c1) + (SELECT count(*)::int FROM c2), 6, 'setup: six tasks are running');
CREATE TEMP TABLE fd AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM k WHERE label = 'done'), (SELECT id FROM w1), 1, 'succeeded', '{"first": true}');
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - interval '1 second' FROM k WHERE k.label = 'expired' AND t.task_id = k.task_id;
UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at
  FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired' AND a.task_id = t.task_id AND a.attempt_number = t.attempt_count;

-- The batch, in this input order.
CREATE TEMP TABLE b (pos int, label text, attempt_number int, outcome text);
INSERT INTO b VALUES (1, 'ok_b', 1, 'failed'), (2, 'missing', 1, 'succeeded'), (3, 'queued', 1, 'succeeded'),
                     (4, 'stale', 2, 'succeeded'), (5, 'owner', 1, 'succeeded'), (6, 'expired', 1, 'succeeded'),
                     (7, 'done', 1, 'failed'), (8, 'ok_a', 1, 'succeeded');
CREATE TEMP TABLE refused AS SELECT k.* FROM k JOIN b USING (label) WHERE b.label NOT IN ('ok_a', 'ok_b');
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN refused USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN refused USING (task_id);

CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many(
    (SELECT id FROM w1),
    (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (label)),
    (SELECT array_agg(b.attempt_number ORDER BY b.pos) FROM b),
    (SELECT array_agg(b.outcome ORDER BY b.pos) FROM b),
    (SELECT array_agg(jsonb_build_object('from', b.label) ORDER BY b.pos) FROM b),
    (SELECT array_agg(jsonb_build_object('message', 'err ' || b.label) ORDER BY b.pos) FROM b))
    WITH ORDINALITY r(task_id, attempt_number, accepted, task_state, reason, pos);

SELECT results_eq(
    $$SELECT f.pos, k.label, f.attempt_number, f.accepted, f.task_state, f.reason FROM f JOIN k USING (task_id) ORDER BY f.pos$$,
    $$VALUES (1::bigint, 'ok_b'::text, 1, true, 'FAILED'::text, NULL::text),
             (2, 'missing', 1, false, NULL, 'not_found'),
             (3, 'queued', 1, false, 'QUEUED', 'not_running'),
             (4, 'stale', 2, false, 'RUNNING', 'stale_attempt'),
             (5, 'owner', 1, false, 'RUNNING', 'not_owner'),
             (6, 'expired', 1, false, 'RUNNING', 'lease_expired'),
             (7, 'done', 1, false, 'SUCCEEDED', 'not_running'),
             (8, 'ok_a', 1, true, 'SUCCEEDED', NULL)$$,
    'one row per element in input order: accepted, task state and reason each as tf_finalize would');
SELECT is((SELECT count(*)::int FROM f), 8, 'eight rows for eight elements');

-- Refused elements changed nothing.
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'the refused tasks are unchanged');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id, a.attempt_number) FROM taskforge.attempts a JOIN refused USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id, x.attempt_number) FROM snap_att x), 'their attempts are unchanged');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN k USING (task_id) WHERE k.label IN ('queued', 'missing')), 0,
    'no attempt row was invented for the queued or missing task');
SELECT is((SELECT state FROM taskforge.attempts JOIN k USING (task_id) WHERE k.label = 'expired'), 'RUNNING',
    'the expired attempt is still RUNNING, left to recovery');
SELECT is((SELECT result FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'done'), '{"first": true}'::jsonb,
    'the finished task keeps its first result');
SELECT ok((SELECT last_error IS NULL FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'done'),
    'and got no error from the refused element');

-- Accepted elements: ok_a succeeded, ok_b failed.
SELECT is((SELECT t.state || '/' || a.state || '/' || a.outcome FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            JOIN k USING (task_id) WHERE k.label = 'ok_a'), 'SUCCEEDED/SUCCEEDED/succeeded', 'ok_a: task and attempt SUCCEEDED');
SELECT is((SELECT t.result FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'ok_a'), '{"from": "ok_a"}'::jsonb,
    'ok_a stores its own result');
SELECT ok((SELECT t.last_error IS NULL AND a.error IS NULL FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            JOIN k USING (task_id) WHERE k.label = 'ok_a'), 'the error given for a succeeded element is not stored');
SELECT is((SELECT t.state || '/' || a.state || '/' || a.outcome FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            JOIN k USING (task_id) WHERE k.label = 'ok_b'), 'FAILED/FAILED/failed', 'ok_b: task and attempt FAILED');
SELECT ok((SELECT t.result IS NULL AND a.result IS NULL FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            JOIN k USING (task_id) WHERE k.label = 'ok_b'), 'the result given for a failed element is not stored');
SELECT is((SELECT a.error FROM taskforge.attempts a JOIN k USING (task_id) WHERE k.label = 'ok_b'), '{"message": "err ok_b"}'::jsonb,
    'ok_b stores its own error');

-- Both wrong attempt and wrong owner: stale_attempt is reported first.
SELECT is((SELECT reason FROM taskforge.tf_finalize_many((SELECT id FROM w1), ARRAY[(SELECT task_id FROM k WHERE label = 'owner')],
                                                         ARRAY[2], ARRAY['succeeded'])),
    'stale_attempt', 'wrong attempt and wrong owner: stale_attempt is reported first');

-- Recovered and claimed by w2: the old owner is stale, or not the owner of the new attempt.
CREATE TEMP TABLE rec AS SELECT * FROM taskforge.tf_recover(100000);
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w2), ARRAY['q_fmany_guards_1'], 60);
SELECT is((SELECT c3.task_id FROM c3), (SELECT task_id FROM k WHERE label = 'expired'), 'the expired task was recovered and claimed by w2');
SELECT is((SELECT attempt_number FROM c3), 2, 'as attempt 2');
CREATE TEMP TABLE snap2 AS SELECT t.* FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired';
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w1),
    ARRAY[(SELECT task_id FROM k WHERE label = 'expired'), (SELECT task_id FROM k WHERE label = 'owner')], ARRAY[1, 1],
    ARRAY['succeeded', 'succeeded'], ARRAY['{"late": true}'::jsonb, '{"late": true}'::jsonb]);
SELECT is((SELECT array_agg(reason ORDER BY reason) FROM f2), ARRAY['not_owner', 'stale_attempt'],
    'the replaced owner gets stale_attempt for its old attempt (and not_owner for w2''s other task)');
SELECT is((SELECT reason FROM taskforge.tf_finalize_many((SELECT id FROM w1), ARRAY[(SELECT task_id FROM k WHERE label = 'expired')],
                                                         ARRAY[2], ARRAY['succeeded'])),
    'not_owner', 'naming the new attempt it gets not_owner');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'expired'), (SELECT x::text FROM snap2 x),
    'the new owner''s task is untouched');
SELECT ok((SELECT result IS NULL FROM taskforge.attempts a JOIN k USING (task_id) WHERE k.label = 'expired' AND a.attempt_number = 1),
    'the late result was not written to the abandoned attempt');

-- Accepted again is refused: a second finalize of the same attempts.
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w1),
    ARRAY[(SELECT task_id FROM k WHERE label = 'ok_a'), (SELECT task_id FROM k WHERE label = 'ok_b')], ARRAY[1, 1],
    ARRAY['failed', 'succeeded']);
SELECT is((SELECT array_agg(accepted::text || '/' || task_state || '/' || reason ORDER BY task_id) FROM f3),
    ARRAY['false/SUCCEEDED/not_running', 'false/FAILED/not_running'], 'finalizing the same attempts twice: not_running, states kept');
SELECT is((SELECT t.result FROM taskforge.tasks t JOIN k USING (task_id) WHERE k.label = 'ok_a'), '{"from": "ok_a"}'::jsonb,
    'the first result stays');

-- The current owner finalizes.
CREATE TEMP TABLE f4 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w2),
    ARRAY[(SELECT task_id FROM k WHERE label = 'expired'), (SELECT task_id FROM k WHERE label = 'owner')], ARRAY[2, 1],
    ARRAY['succeeded', 'cancelled'], ARRAY['{"r": 2}'::jsonb, NULL]);
SELECT is((SELECT array_agg(accepted::text || '/' || task_state ORDER BY task_id) FROM f4), ARRAY['true/SUCCEEDED', 'true/CANCELLED'],
    'w2 finalizes both of its attempts');
SELECT is((SELECT result FROM taskforge.tasks JOIN k USING (task_id) WHERE label = 'expired'), '{"r": 2}'::jsonb,
    'only the current owner''s result is stored');
SELECT is((SELECT count(*)::int FROM taskforge.tasks JOIN k USING (task_id) WHERE state = 'RUNNING'), 1,
    'only the stale task is still RUNNING');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
