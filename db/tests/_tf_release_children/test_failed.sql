-- _tf_release_children: a parent finalized 'failed' (or 'cancelled') ends its BLOCKED descendants, children and grandchildren alike, CANCELLED with cancel_reason 'dependency_failed', finished (and cancel-requested) at the parent's finish, no attempt; tasks not below it are untouched, and a later success of another parent does not bring a cancelled child back.
BEGIN;
SELECT plan(12);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-failed-w1') AS id;
CREATE TEMP TABLE t (name text PRIMARY KEY, task_id bigint);
-- sub(name, parents): submit a task on the named parents (in queue release_failed_<name>).
CREATE FUNCTION pg_temp.sub(p_name text, p_parents text[]) RETURNS void LANGUAGE sql AS $helper$
    INSERT INTO t SELECT p_name, s.task_id
      FROM taskforge.tf_submit('noop', queue => 'release_failed_' || p_name,
                               depends_on => (SELECT array_agg(task_id) FROM t WHERE name = ANY (p_parents))) s;
$helper$;
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM t WHERE name = p_name $helper$;
-- a -> b -> c -> g; e on a and x; u on x only; y -> z.
DO $$ BEGIN
    PERFORM pg_temp.sub('a', NULL), pg_temp.sub('x', NULL), pg_temp.sub('y', NULL);
    PERFORM pg_temp.sub('b', ARRAY['a']), pg_temp.sub('e', ARRAY['a', 'x']), pg_temp.sub('u', ARRAY['x']), pg_temp.sub('z', ARRAY['y']);
    PERFORM pg_temp.sub('c', ARRAY['b']);
    PERFORM pg_temp.sub('g', ARRAY['c']);
END $$;
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_failed_a', 'release_failed_y'], max_tasks => 2);
SELECT results_eq($$SELECT t.name, k.state::text, k.parents_pending FROM t JOIN taskforge.tasks k USING (task_id) ORDER BY t.name$$,
                  $$VALUES ('a'::text, 'RUNNING'::text, 0), ('b', 'BLOCKED', 1), ('c', 'BLOCKED', 1), ('e', 'BLOCKED', 2), ('g', 'BLOCKED', 1),
                           ('u', 'BLOCKED', 1), ('x', 'QUEUED', 0), ('y', 'RUNNING', 0), ('z', 'BLOCKED', 1)$$,
                  'setup: a and y RUNNING, their descendants BLOCKED');

CREATE TEMP TABLE fa AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('a'), (SELECT id FROM w), 1, 'failed', error => '{"type": "bug"}');
SELECT results_eq('SELECT accepted, task_state FROM fa', $$VALUES (true, 'FAILED'::text)$$, 'a is FAILED');
SELECT results_eq($$SELECT t.name, k.state::text, k.cancel_reason, k.parents_pending FROM t JOIN taskforge.tasks k USING (task_id)
                     WHERE t.name IN ('b', 'c', 'e', 'g') ORDER BY t.name$$,
                  $$VALUES ('b'::text, 'CANCELLED'::text, 'dependency_failed'::text, 0), ('c', 'CANCELLED', 'dependency_failed', 0),
                           ('e', 'CANCELLED', 'dependency_failed', 0), ('g', 'CANCELLED', 'dependency_failed', 0)$$,
                  'every descendant of a (child b, grandchild c, great-grandchild g, child e of a and x) is CANCELLED dependency_failed');
SELECT is_empty($$SELECT t.name FROM t JOIN taskforge.tasks k USING (task_id)
                   WHERE t.name IN ('b', 'c', 'e', 'g')
                     AND NOT (k.finished_at = (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id('a'))
                              AND k.cancel_requested_at = k.finished_at AND k.updated_at = k.finished_at)$$,
                'each is finished, cancel-requested and updated at a''s finish');
SELECT is_empty($$SELECT * FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM t WHERE name IN ('b', 'c', 'e', 'g'))$$,
                'none of them has an attempt');
SELECT is((SELECT sum(attempt_count)::int FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM t WHERE name IN ('b', 'c', 'e', 'g'))), 0,
          'attempt_count stays 0');
SELECT results_eq($$SELECT t.name, k.state::text, k.parents_pending FROM t JOIN taskforge.tasks k USING (task_id)
                     WHERE t.name IN ('u', 'x', 'y', 'z') ORDER BY t.name$$,
                  $$VALUES ('u'::text, 'BLOCKED'::text, 1), ('x', 'QUEUED', 0), ('y', 'RUNNING', 0), ('z', 'BLOCKED', 1)$$,
                  'tasks not below a are untouched (x, the other parent of e, and its child u too)');
-- x succeeds: u is released, e stays CANCELLED.
CREATE TEMP TABLE cx AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_failed_x']);
CREATE TEMP TABLE fx AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('x'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT t.name, k.state::text FROM t JOIN taskforge.tasks k USING (task_id) WHERE t.name IN ('e', 'u') ORDER BY t.name$$,
                  $$VALUES ('e'::text, 'CANCELLED'::text), ('u', 'QUEUED')$$,
                  'x SUCCEEDED: u QUEUED, while e (cancelled through a) stays CANCELLED');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_failed_b', 'release_failed_c', 'release_failed_e',
                                                                             'release_failed_g'], max_tasks => 10)$$,
                'no cancelled descendant is ever claimed');

-- A parent finalized 'cancelled' cancels its children the same way.
CREATE TEMP TABLE fy AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('y'), (SELECT id FROM w), 1, 'cancelled');
SELECT results_eq('SELECT accepted, task_state FROM fy', $$VALUES (true, 'CANCELLED'::text)$$, 'y is CANCELLED by its worker');
SELECT results_eq($$SELECT k.state::text, k.cancel_reason, k.finished_at = (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id('y'))
                      FROM taskforge.tasks k WHERE k.task_id = pg_temp.id('z')$$,
                  $$VALUES ('CANCELLED'::text, 'dependency_failed'::text, true)$$, 'its child z is CANCELLED dependency_failed at y''s finish');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
