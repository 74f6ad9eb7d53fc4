-- _tf_release_children on redrive: tf_retry of a FAILED parent brings back as BLOCKED the children (and through them the grandchildren) its failure cancelled, counting their unfinished parents; a child with another parent still FAILED stays CANCELLED until that one is retried too; a child cancelled by hand is left alone.
BEGIN;
SELECT plan(16);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-redrive-w1') AS id;
CREATE TEMP TABLE t (name text PRIMARY KEY, task_id bigint);
CREATE FUNCTION pg_temp.sub(p_name text, p_parents text[]) RETURNS void LANGUAGE sql AS $helper$
    INSERT INTO t SELECT p_name, s.task_id
      FROM taskforge.tf_submit('noop', queue => 'release_redrive_' || p_name,
                               depends_on => (SELECT array_agg(task_id) FROM t WHERE name = ANY (p_parents))) s;
$helper$;
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM t WHERE name = p_name $helper$;
CREATE FUNCTION pg_temp.states(p_names text[]) RETURNS TABLE(name text, state text, parents_pending int, cancel_reason text)
LANGUAGE sql AS $helper$
    SELECT t.name, k.state::text, k.parents_pending, k.cancel_reason FROM t JOIN taskforge.tasks k USING (task_id)
     WHERE t.name = ANY (p_names) ORDER BY t.name
$helper$;
-- a -> b -> c; d on a and x; e on a (cancelled by hand).
DO $$ BEGIN
    PERFORM pg_temp.sub('a', NULL), pg_temp.sub('x', NULL);
    PERFORM pg_temp.sub('b', ARRAY['a']), pg_temp.sub('d', ARRAY['a', 'x']), pg_temp.sub('e', ARRAY['a']);
    PERFORM pg_temp.sub('c', ARRAY['b']);
END $$;
CREATE TEMP TABLE xe AS SELECT * FROM taskforge.tf_cancel(pg_temp.id('e'), 'manual');
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_redrive_a', 'release_redrive_x'], max_tasks => 2);
CREATE TEMP TABLE f1 AS
SELECT * FROM taskforge.tf_finalize(pg_temp.id('a'), (SELECT id FROM w), 1, 'failed')
UNION ALL
SELECT * FROM taskforge.tf_finalize(pg_temp.id('x'), (SELECT id FROM w), 1, 'failed');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['a', 'b', 'c', 'd', 'e', 'x'])$$,
                  $$VALUES ('a'::text, 'FAILED'::text, 0, NULL::text), ('b', 'CANCELLED', 0, 'dependency_failed'),
                           ('c', 'CANCELLED', 0, 'dependency_failed'), ('d', 'CANCELLED', 0, 'dependency_failed'),
                           ('e', 'CANCELLED', 0, 'manual'), ('x', 'FAILED', 0, NULL)$$,
                  'setup: a and x FAILED, their descendants CANCELLED, e cancelled by hand');

-- Redrive a.
CREATE TEMP TABLE ra AS SELECT * FROM taskforge.tf_retry(pg_temp.id('a'));
SELECT results_eq('SELECT task_state FROM ra', ARRAY['QUEUED'], 'tf_retry of a: QUEUED');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['b', 'c'])$$,
                  $$VALUES ('b'::text, 'BLOCKED'::text, 1, NULL::text), ('c', 'BLOCKED', 1, NULL)$$,
                  'the child b and the grandchild c are BLOCKED again, each waiting for its parent');
SELECT is_empty($$SELECT t.name FROM t JOIN taskforge.tasks k USING (task_id) WHERE t.name IN ('b', 'c')
                   AND (k.finished_at IS NOT NULL OR k.cancel_requested_at IS NOT NULL
                        OR k.updated_at <> (SELECT updated_at FROM taskforge.tasks WHERE task_id = pg_temp.id('a')))$$,
                'their finish and cancel request are cleared, updated at the redrive''s instant');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['d'])$$, $$VALUES ('d'::text, 'CANCELLED'::text, 0, 'dependency_failed'::text)$$,
                  'd, whose other parent x is still FAILED, stays CANCELLED');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['e'])$$, $$VALUES ('e'::text, 'CANCELLED'::text, 0, 'manual'::text)$$,
                  'e, cancelled by hand, stays CANCELLED');
-- Redrive x: now d comes back, waiting for both.
CREATE TEMP TABLE rx AS SELECT * FROM taskforge.tf_retry(pg_temp.id('x'));
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['d'])$$, $$VALUES ('d'::text, 'BLOCKED'::text, 2, NULL::text)$$,
                  'x retried too: d is BLOCKED, waiting for a and x');
-- The flow runs again: a succeeds.
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_redrive_a']);
SELECT results_eq('SELECT attempt_number FROM c2', ARRAY[2], 'a is claimed again, attempt 2');
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('a'), (SELECT id FROM w), 2, 'succeeded');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['b', 'c', 'd'])$$,
                  $$VALUES ('b'::text, 'QUEUED'::text, 0, NULL::text), ('c', 'BLOCKED', 1, NULL), ('d', 'BLOCKED', 1, NULL)$$,
                  'a SUCCEEDED: b QUEUED, c waits for b, d for x');
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_redrive_b']);
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('b'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['c'])$$, $$VALUES ('c'::text, 'QUEUED'::text, 0, NULL::text)$$,
                  'b SUCCEEDED: the redriven grandchild c is QUEUED');
SELECT is_empty($$SELECT * FROM taskforge.attempts WHERE task_id IN (SELECT task_id FROM t WHERE name IN ('c', 'd', 'e'))$$,
                'the redriven tasks have no attempt of their own yet');
-- A child submitted after its parent FAILED starts CANCELLED dependency_failed; the parent's redrive brings it back too.
CREATE TEMP TABLE late AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'release_redrive_late', depends_on => ARRAY[pg_temp.id('x')]);
SELECT results_eq($$SELECT state::text, parents_pending FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM late)$$,
                  $$VALUES ('BLOCKED'::text, 1)$$, 'a child submitted after x failed and was retried waits for x');
CREATE TEMP TABLE cx AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_redrive_x']);
CREATE TEMP TABLE fx AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('x'), (SELECT id FROM w), 2, 'failed');
CREATE TEMP TABLE late2 AS SELECT * FROM taskforge.tf_submit('noop', queue => 'release_redrive_late', depends_on => ARRAY[pg_temp.id('x')]);
SELECT results_eq($$SELECT s.state, t.cancel_reason FROM late2 s JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES ('CANCELLED'::text, 'dependency_failed'::text)$$, 'x FAILED again: a new child is CANCELLED at submit');
CREATE TEMP TABLE rx2 AS SELECT * FROM taskforge.tf_retry(pg_temp.id('x'));
SELECT results_eq($$SELECT t.state::text, t.parents_pending, t.finished_at FROM taskforge.tasks t
                     WHERE t.task_id IN ((SELECT task_id FROM late), (SELECT task_id FROM late2)) ORDER BY t.task_id$$,
                  $$VALUES ('BLOCKED'::text, 1, NULL::timestamptz), ('BLOCKED', 1, NULL)$$,
                  'x retried: both late children (cancelled by the cascade and at submit) are BLOCKED again');
-- A redriven child is BLOCKED, not FAILED or CANCELLED: tf_retry of it is TF409.
SELECT throws_ok($$SELECT * FROM taskforge.tf_retry(pg_temp.id('d'))$$, 'TF409', NULL, 'tf_retry of the BLOCKED d is TF409');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
