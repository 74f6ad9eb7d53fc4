-- tf_finalize_many returns exactly one row per element in input order, whatever the order of the task ids and whichever elements are accepted or refused (200 elements, shuffled, a third refused).
BEGIN;
SELECT plan(6);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_order') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_order')) AS task_id
  FROM generate_series(1, 200) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_order'], 60, max_tasks => 1000);
SELECT is((SELECT count(*)::int FROM c), 200, 'setup: 200 tasks are running');

-- A fixed shuffle: position of task n is (n * 73) mod 200 + 1 (73 is prime to 200). Every third task names a wrong attempt.
CREATE TEMP TABLE b AS SELECT (k.n * 73) % 200 + 1 AS pos, k.n, k.task_id, CASE WHEN k.n % 3 = 0 THEN 2 ELSE 1 END AS attempt_number FROM k;
SELECT is((SELECT count(DISTINCT pos)::int FROM b), 200, 'setup: the shuffle is a permutation');
CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many((SELECT id FROM w),
    (SELECT array_agg(task_id ORDER BY pos) FROM b),
    (SELECT array_agg(attempt_number ORDER BY pos) FROM b),
    (SELECT array_agg('succeeded'::text) FROM b),
    (SELECT array_agg(jsonb_build_object('n', n) ORDER BY pos) FROM b))
    WITH ORDINALITY r(task_id, attempt_number, accepted, task_state, reason, pos);

SELECT is((SELECT count(*)::int FROM f), 200, 'one row per element');
SELECT is_empty($$SELECT f.pos FROM f JOIN b ON b.pos = f.pos WHERE (f.task_id, f.attempt_number) IS DISTINCT FROM (b.task_id, b.attempt_number)$$,
    'row i names element i: the rows come in input order');
SELECT is_empty($$SELECT f.pos FROM f JOIN b ON b.pos = f.pos
                   WHERE (f.accepted, f.reason) IS DISTINCT FROM (b.attempt_number = 1, CASE WHEN b.attempt_number = 2 THEN 'stale_attempt' END)
                      OR (b.attempt_number = 1 AND (SELECT t.result FROM taskforge.tasks t WHERE t.task_id = b.task_id) IS DISTINCT FROM jsonb_build_object('n', b.n))$$,
    'each row reports its own element, and each accepted task stores its own element''s result');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
