-- tf_finalize_and_claim with max_tasks 0 only finalizes, exactly as tf_finalize_many: kind 'finalized' rows in input order, nothing claimed though tasks wait, and the worker need not still be registered.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_finalize_only') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fac_finalize_only')) AS task_id
  FROM generate_series(1, 3) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_finalize_only'], 60, max_tasks => 10);
CREATE TEMP TABLE waiting AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fac_finalize_only');

CREATE TEMP TABLE r AS
SELECT x.* FROM taskforge.tf_finalize_and_claim((SELECT id FROM w),
        ARRAY[(SELECT task_id FROM k WHERE n = 2), (SELECT task_id FROM k WHERE n = 1)], ARRAY[1, 1], ARRAY['succeeded', 'failed'],
        ARRAY['{"r": 2}'::jsonb, NULL], ARRAY[NULL, '{"message": "e1"}'::jsonb],
        queues => ARRAY['q_fac_finalize_only'], max_tasks => 0)
    WITH ORDINALITY x(kind, task_id, attempt_number, accepted, task_state, reason, task_type, payload, queue, priority,
                         max_attempts, lease_expires_at, timeout_seconds, traceparent, pos);

SELECT results_eq($$SELECT r.kind, k.n, r.attempt_number, r.accepted, r.task_state, r.reason FROM r JOIN k USING (task_id) ORDER BY r.pos$$,
                  $$VALUES ('finalized', 2, 1, true, 'SUCCEEDED', NULL::text), ('finalized', 1, 1, true, 'FAILED', NULL)$$,
                  'one finalized row per element in input order, and nothing else');
SELECT is((SELECT count(*)::int FROM r WHERE task_type IS NULL AND payload IS NULL AND queue IS NULL AND priority IS NULL
                                        AND max_attempts IS NULL AND lease_expires_at IS NULL), 2, 'the claim columns of finalized rows are NULL');
SELECT is((SELECT t.state::text FROM taskforge.tasks t JOIN waiting USING (task_id)), 'QUEUED', 'max_tasks 0 claims nothing, though a task is due');
SELECT results_eq($$SELECT k.n, t.state::text, t.result, t.last_error FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.n <= 2 ORDER BY k.n$$,
                  $$VALUES (1, 'FAILED', NULL::jsonb, '{"message": "e1"}'::jsonb), (2, 'SUCCEEDED', '{"r": 2}'::jsonb, NULL)$$,
                  'the outcomes, result and error are stored as tf_finalize_many would');
SELECT is((SELECT array_agg(a.state::text ORDER BY k.n) FROM k JOIN taskforge.attempts a USING (task_id)), ARRAY['FAILED', 'SUCCEEDED', 'RUNNING'],
    'the attempts ended; the one not named still runs');

-- A deregistered worker may still finalize what it owns (max_tasks 0); the guard does not ask for registration.
SELECT lives_ok(format('SELECT taskforge.tf_deregister_worker(%L)', (SELECT id FROM w)), 'deregister the worker');
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM k WHERE n = 3)], ARRAY[1],
                                                                       ARRAY['cancelled'], max_tasks => 0);
SELECT is((SELECT kind || '/' || accepted || '/' || task_state FROM r2), 'finalized/true/CANCELLED',
    'a deregistered worker finalizes its last attempt with max_tasks 0');
SELECT is((SELECT count(*)::int FROM r2), 1, 'one row');
-- An unknown worker id with max_tasks 0: no TF404, the guard refuses the element.
SELECT is((SELECT kind || '/' || accepted || '/' || reason FROM taskforge.tf_finalize_and_claim(gen_random_uuid(), ARRAY[(SELECT task_id FROM waiting)], ARRAY[1],
                                                                                              ARRAY['succeeded'], max_tasks => 0)),
    'finalized/false/not_running', 'an unknown worker with max_tasks 0 is refused per element, not TF404');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
