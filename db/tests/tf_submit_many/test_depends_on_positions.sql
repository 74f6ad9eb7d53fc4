-- tf_submit_many's depends_on_positions: earlier elements of the same call as parents, so a diamond (A; B, C on A; D on B and C) is one call: QUEUED, BLOCKED, BLOCKED, BLOCKED with D waiting for 2; positions mix with depends_on ids (duplicates count once); with idempotency keys a replay of the whole graph returns the same ids, created = false, and a graph whose positions resolve to other parents is TF409.
BEGIN;
SELECT plan(15);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('many-deps-w1') AS id;
CREATE TEMP TABLE g AS
SELECT r.n - 1 AS i, r.task_id, r.state, r.created FROM taskforge.tf_submit_many('[
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-a"},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-b", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-c", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-d", "depends_on_positions": [1, 2]}]') WITH ORDINALITY r(task_id, state, created, n);
-- id(i): the task of element i.
CREATE FUNCTION pg_temp.id(p_i int) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM g WHERE i = p_i $helper$;

SELECT results_eq('SELECT i::int, state, created FROM g ORDER BY i',
                  $$VALUES (0, 'QUEUED'::text, true), (1, 'BLOCKED', true), (2, 'BLOCKED', true), (3, 'BLOCKED', true)$$,
                  'the diamond in one call: A QUEUED, B, C, D BLOCKED');
SELECT results_eq($$SELECT g.i::int, t.parents_pending, t.has_children FROM g JOIN taskforge.tasks t USING (task_id) ORDER BY g.i$$,
                  $$VALUES (0, 0, true), (1, 1, true), (2, 1, true), (3, 2, false)$$,
                  'D waits for two parents, B and C for one; A, B and C are marked as parents');
SELECT results_eq($$SELECT c.i::int, p.i::int FROM taskforge.task_dependencies d JOIN g c ON c.task_id = d.child_task_id
                     JOIN g p ON p.task_id = d.parent_task_id ORDER BY 1, 2$$,
                  $$VALUES (1, 0), (2, 0), (3, 1), (3, 2)$$, 'the edges are B->A, C->A, D->B, D->C');

-- Replay of the whole graph: the same ids, nothing created.
CREATE TEMP TABLE again AS
SELECT r.n - 1 AS i, r.task_id, r.state, r.created FROM taskforge.tf_submit_many('[
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-a"},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-b", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-c", "depends_on_positions": [0, 0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-d", "depends_on_positions": [2, 1]}]') WITH ORDINALITY r(task_id, state, created, n);
SELECT results_eq('SELECT i, task_id, state, created FROM again ORDER BY i', 'SELECT i, task_id, state, false FROM g ORDER BY i',
                  'the replayed graph (positions reordered, repeated) is the stored one: same ids and states, created = false');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'many_deps'), 4, 'the replay created no task');
SELECT is((SELECT count(*)::int FROM taskforge.task_dependencies WHERE child_task_id IN (SELECT task_id FROM g)), 4, 'and no edge');
-- The same positions with the ids written out are the same request too.
SELECT results_eq(format($$SELECT task_id, created FROM taskforge.tf_submit_many(%L)$$,
                         jsonb_build_array(jsonb_build_object('task_type', 'noop', 'queue', 'many_deps', 'idempotency_key', 'many-deps-d',
                                                              'depends_on', jsonb_build_array(pg_temp.id(1), pg_temp.id(2))))),
                  $$SELECT task_id, false FROM g WHERE i = 3$$, 'D given its parents as ids replays too (the fingerprint has the ids)');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit_many('[
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-a"},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-b", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-c", "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps", "idempotency_key": "many-deps-d", "depends_on_positions": [1]}]')$$,
                 'TF409', NULL, 'D on B only is another request: TF409');
SELECT is(pg_temp.id(3), (SELECT task_id FROM taskforge.tasks WHERE idempotency_key = 'many-deps-d'), 'D is unchanged');

-- depends_on ids and positions together; duplicates across the two lists count once.
CREATE TEMP TABLE outside AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'many_deps_outside');
CREATE TEMP TABLE mixed AS
SELECT r.n - 1 AS i, r.task_id, r.state, r.created FROM taskforge.tf_submit_many(format('[
    {"task_type": "noop", "queue": "many_deps_mixed"},
    {"task_type": "noop", "queue": "many_deps_mixed", "depends_on": [%1$s], "depends_on_positions": [0]},
    {"task_type": "noop", "queue": "many_deps_mixed", "depends_on": [%2$s, %1$s], "depends_on_positions": [1, 1]}]',
    (SELECT task_id FROM outside), pg_temp.id(0))::jsonb) WITH ORDINALITY r(task_id, state, created, n);
SELECT results_eq($$SELECT m.i::int, m.state, t.parents_pending FROM mixed m JOIN taskforge.tasks t USING (task_id) ORDER BY m.i$$,
                  $$VALUES (0, 'QUEUED'::text, 0), (1, 'BLOCKED', 2), (2, 'BLOCKED', 3)$$,
                  'ids and positions are parents alike');
SELECT results_eq($$SELECT d.parent_task_id FROM taskforge.task_dependencies d WHERE d.child_task_id = (SELECT task_id FROM mixed WHERE i = 2)
                    ORDER BY 1$$,
                  $$SELECT unnest(ARRAY[pg_temp.id(0), (SELECT task_id FROM outside), (SELECT task_id FROM mixed WHERE i = 1)]) ORDER BY 1$$,
                  'element 2 has three distinct parents: A, the outside task and element 1 (given twice)');
-- A CANCELLED parent outside the call cancels its child, and the child's own child in the call.
CREATE TEMP TABLE gone AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'many_deps_cancel_parent');
CREATE TEMP TABLE gone_x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM gone));
CREATE TEMP TABLE cancelled AS
SELECT r.n - 1 AS i, r.task_id, r.state, r.created FROM taskforge.tf_submit_many(format('[
    {"task_type": "noop", "queue": "many_deps_cancel", "depends_on": [%s]},
    {"task_type": "noop", "queue": "many_deps_cancel", "depends_on_positions": [0]}]', (SELECT task_id FROM gone))::jsonb) WITH ORDINALITY r(task_id, state, created, n);
SELECT results_eq('SELECT i::int, state FROM cancelled ORDER BY i', $$VALUES (0, 'CANCELLED'::text), (1, 'CANCELLED')$$,
                  'a child of a CANCELLED task is CANCELLED, and so is its own child in the same call');

-- The graph runs: A succeeds, B and C are QUEUED, D still waits.
CREATE TEMP TABLE ca AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['many_deps'], max_tasks => 10);
SELECT results_eq('SELECT task_id FROM ca', 'SELECT task_id FROM g WHERE i = 0', 'only A is claimed');
CREATE TEMP TABLE fa AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(0), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT g.i::int, t.state::text, t.parents_pending FROM g JOIN taskforge.tasks t USING (task_id) ORDER BY g.i$$,
                  $$VALUES (0, 'SUCCEEDED'::text, 0), (1, 'QUEUED', 0), (2, 'QUEUED', 0), (3, 'BLOCKED', 2)$$,
                  'A SUCCEEDED: B and C QUEUED, D still waits for both');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
