-- _tf_release_children through tf_cancel: cancelling a BLOCKED middle task cancels its BLOCKED descendants (dependency_failed) and leaves its parent alone; cancelling a QUEUED parent cancels its children; a cancel request on a RUNNING parent changes no child until the parent ends (a success still releases them).
BEGIN;
SELECT plan(12);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-cancel-w1') AS id;
CREATE TEMP TABLE t (name text PRIMARY KEY, task_id bigint);
CREATE FUNCTION pg_temp.sub(p_name text, p_parents text[]) RETURNS void LANGUAGE sql AS $helper$
    INSERT INTO t SELECT p_name, s.task_id
      FROM taskforge.tf_submit('noop', queue => 'release_cancel_' || p_name,
                               depends_on => (SELECT array_agg(task_id) FROM t WHERE name = ANY (p_parents))) s;
$helper$;
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM t WHERE name = p_name $helper$;
CREATE FUNCTION pg_temp.states(p_names text[]) RETURNS TABLE(name text, state text, cancel_reason text) LANGUAGE sql AS $helper$
    SELECT t.name, k.state::text, k.cancel_reason FROM t JOIN taskforge.tasks k USING (task_id) WHERE t.name = ANY (p_names) ORDER BY t.name
$helper$;
-- top -> mid -> leaf1, leaf2 -> deep (on leaf1); q -> qc; r -> rc.
DO $$ BEGIN
    PERFORM pg_temp.sub('top', NULL), pg_temp.sub('q', NULL), pg_temp.sub('r', NULL);
    PERFORM pg_temp.sub('mid', ARRAY['top']), pg_temp.sub('qc', ARRAY['q']), pg_temp.sub('rc', ARRAY['r']);
    PERFORM pg_temp.sub('leaf1', ARRAY['mid']), pg_temp.sub('leaf2', ARRAY['mid']);
    PERFORM pg_temp.sub('deep', ARRAY['leaf1']);
END $$;
SELECT results_eq($$SELECT state, count(*)::int FROM pg_temp.states(ARRAY['top', 'mid', 'leaf1', 'leaf2', 'deep']) GROUP BY state ORDER BY state$$,
                  $$VALUES ('BLOCKED'::text, 4), ('QUEUED', 1)$$, 'setup: top QUEUED, mid, leaf1, leaf2 and deep BLOCKED');

-- A BLOCKED middle task.
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel(pg_temp.id('mid'), 'not needed')$$,
                  $$VALUES ('CANCELLED'::text, true)$$, 'tf_cancel of a BLOCKED task: CANCELLED at once');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['top', 'mid', 'leaf1', 'leaf2', 'deep'])$$,
                  $$VALUES ('deep'::text, 'CANCELLED'::text, 'dependency_failed'::text), ('leaf1', 'CANCELLED', 'dependency_failed'),
                           ('leaf2', 'CANCELLED', 'dependency_failed'), ('mid', 'CANCELLED', 'not needed'), ('top', 'QUEUED', NULL)$$,
                  'its descendants are CANCELLED dependency_failed, it keeps its own reason, its parent stays QUEUED');
SELECT is_empty($$SELECT t.name FROM t JOIN taskforge.tasks k USING (task_id) WHERE t.name IN ('leaf1', 'leaf2', 'deep')
                   AND (k.finished_at IS DISTINCT FROM (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id('mid'))
                        OR k.parents_pending <> 0)$$,
                'finished at mid''s cancel, none pending');
SELECT is((SELECT parents_pending FROM taskforge.tasks WHERE task_id = pg_temp.id('mid')), 0, 'the cancelled task itself counts no parent');
-- top succeeds later: mid stays CANCELLED.
CREATE TEMP TABLE ct AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_cancel_top']);
CREATE TEMP TABLE ft AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('top'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT state FROM pg_temp.states(ARRAY['top', 'mid'])$$, ARRAY['CANCELLED', 'SUCCEEDED'],
                  'top SUCCEEDED later: the cancelled mid stays CANCELLED');

-- A QUEUED parent.
SELECT results_eq($$SELECT task_state FROM taskforge.tf_cancel(pg_temp.id('q'))$$, ARRAY['CANCELLED'], 'tf_cancel of a QUEUED parent');
SELECT results_eq($$SELECT * FROM pg_temp.states(ARRAY['qc'])$$, $$VALUES ('qc'::text, 'CANCELLED'::text, 'dependency_failed'::text)$$,
                  'its child is CANCELLED dependency_failed');

-- A RUNNING parent: only a request; the children wait for the outcome.
CREATE TEMP TABLE cr AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_cancel_r']);
SELECT results_eq($$SELECT task_state, cancel_requested FROM taskforge.tf_cancel(pg_temp.id('r'))$$, $$VALUES ('RUNNING'::text, true)$$,
                  'tf_cancel of a RUNNING parent is a request');
SELECT results_eq($$SELECT t.name, k.state::text, k.parents_pending FROM t JOIN taskforge.tasks k USING (task_id) WHERE t.name = 'rc'$$,
                  $$VALUES ('rc'::text, 'BLOCKED'::text, 1)$$, 'its child still waits');
CREATE TEMP TABLE fr AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('r'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT state FROM pg_temp.states(ARRAY['r', 'rc'])$$, ARRAY['SUCCEEDED', 'QUEUED'],
                  'the work happened (SUCCEEDED despite the request): the child is released');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
