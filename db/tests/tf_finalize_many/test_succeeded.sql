-- tf_finalize_many 'succeeded': each element's attempt and task become SUCCEEDED together, each stores its own result (NULL when the element's result is NULL), owner and lease are cleared.
BEGIN;
SELECT plan(13);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_succeeded') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_succeeded')) AS task_id
  FROM generate_series(1, 4) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_succeeded'], 60, max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c), 4, 'setup: four tasks are running');
CREATE TEMP TABLE before_call AS SELECT clock_timestamp() AS at;

-- Input order 3, 1, 4, 2; task 4 has no result.
CREATE TEMP TABLE b (pos int, n int, result jsonb);
INSERT INTO b VALUES (1, 3, '{"answer": 3}'), (2, 1, '[1, "one"]'), (3, 4, NULL), (4, 2, '"two"');
CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many(
    (SELECT id FROM w),
    (SELECT array_agg(k.task_id ORDER BY b.pos) FROM b JOIN k USING (n)),
    ARRAY[1, 1, 1, 1],
    ARRAY['succeeded', 'succeeded', 'succeeded', 'succeeded'],
    (SELECT array_agg(b.result ORDER BY b.pos) FROM b))
    WITH ORDINALITY r(task_id, attempt_number, accepted, task_state, reason, pos);

SELECT results_eq($$SELECT k.n, f.attempt_number, f.accepted, f.task_state, f.reason FROM f JOIN k USING (task_id) ORDER BY f.pos$$,
                  $$VALUES (3, 1, true, 'SUCCEEDED', NULL::text), (1, 1, true, 'SUCCEEDED', NULL), (4, 1, true, 'SUCCEEDED', NULL),
                           (2, 1, true, 'SUCCEEDED', NULL)$$,
                  'one accepted row per element, in input order (not task order)');
SELECT results_eq($$SELECT k.n, t.result FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.n$$,
                  $$VALUES (1, '[1, "one"]'::jsonb), (2, '"two"'::jsonb), (3, '{"answer": 3}'::jsonb), (4, NULL::jsonb)$$,
                  'each task stores the result given with its own element (any JSON; NULL stays NULL)');
SELECT results_eq($$SELECT k.n, a.result FROM k JOIN taskforge.attempts a USING (task_id) ORDER BY k.n$$,
                  $$SELECT k.n, t.result FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.n$$,
                  'each attempt stores the same result as its task');
SELECT is((SELECT array_agg(DISTINCT t.state::text) FROM k JOIN taskforge.tasks t USING (task_id)), ARRAY['SUCCEEDED'], 'every task is SUCCEEDED');
SELECT is((SELECT array_agg(DISTINCT a.state || '/' || a.outcome) FROM k JOIN taskforge.attempts a USING (task_id)),
    ARRAY['SUCCEEDED/succeeded'], 'every attempt is SUCCEEDED with outcome succeeded');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id)
            WHERE t.owner_worker_id IS NULL AND t.lease_expires_at IS NULL AND t.last_error IS NULL), 4,
    'owner and lease are cleared, no error recorded');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.attempts a USING (task_id) WHERE a.error IS NULL), 4, 'no attempt has an error');
SELECT is((SELECT count(DISTINCT t.finished_at)::int FROM k JOIN taskforge.tasks t USING (task_id)), 1,
    'the batch has one finish time (the clock is read once, after the locks)');
SELECT ok((SELECT bool_and(t.finished_at = a.finished_at) FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)),
    'task and attempt finish at the same time');
SELECT ok((SELECT bool_and(t.finished_at >= (SELECT at FROM before_call) AND t.finished_at <= clock_timestamp())
             FROM k JOIN taskforge.tasks t USING (task_id)), 'the finish time is the database clock during the call');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_succeeded'], max_tasks => 10)), 0,
    'succeeded tasks are not claimable');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
