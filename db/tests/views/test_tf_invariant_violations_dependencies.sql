-- tf_invariant_violations reports each broken dependency rule (rows broken by hand, as the owner, inside this transaction; all rolled back), exactly one rule per case, and nothing for a graph handled through the API: a BLOCKED task whose parents_pending is not its count of unfinished parents (or whose parents all SUCCEEDED), a BLOCKED task with a FAILED parent or with attempts, a live task past BLOCKED with a parent not SUCCEEDED, a parent not marked has_children.
BEGIN;
SELECT plan(11);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-inv-deps-w1') AS id;
CREATE TEMP TABLE t (name text PRIMARY KEY, task_id bigint);
-- sub(name, parents): submit a task on the named parents.
CREATE FUNCTION pg_temp.sub(p_name text, p_parents text[]) RETURNS void LANGUAGE sql AS $helper$
    INSERT INTO t SELECT p_name, s.task_id
      FROM taskforge.tf_submit('noop', jsonb_build_object('case', p_name), 'view_inv_deps',
                               depends_on => (SELECT array_agg(task_id) FROM t WHERE name = ANY (p_parents))) s;
$helper$;
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM t WHERE name = p_name $helper$;
-- Parents: open (QUEUED), done (SUCCEEDED), bad (FAILED), ran (a task with a FAILED attempt, no parents).
DO $$ BEGIN
    PERFORM pg_temp.sub('open', NULL), pg_temp.sub('done', NULL), pg_temp.sub('bad', NULL), pg_temp.sub('ran', NULL);
END $$;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_inv_deps'], max_tasks => 4);
CREATE TEMP TABLE f AS
SELECT * FROM taskforge.tf_finalize(pg_temp.id('done'), (SELECT id FROM w), 1, 'succeeded')
UNION ALL
SELECT * FROM taskforge.tf_finalize(pg_temp.id('bad'), (SELECT id FROM w), 1, 'failed')
UNION ALL
SELECT * FROM taskforge.tf_finalize(pg_temp.id('ran'), (SELECT id FROM w), 1, 'failed');
-- open is put back to QUEUED by recovery (its lease expired); it has children below, so it must not stay RUNNING.
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = pg_temp.id('open');
UPDATE taskforge.attempts SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = pg_temp.id('open');
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_recover();
-- Children, all through the API: healthy ones, and one per case to break.
DO $$ BEGIN
    PERFORM pg_temp.sub('healthy_blocked', ARRAY['open', 'done']), pg_temp.sub('healthy_queued', ARRAY['done']),
            pg_temp.sub('healthy_cancelled', ARRAY['bad', 'open']),
            pg_temp.sub('pending_wrong', ARRAY['open', 'done']), pg_temp.sub('pending_zero', ARRAY['done']),
            pg_temp.sub('blocked_failed_parent', ARRAY['bad']), pg_temp.sub('live_past_blocked', ARRAY['open']),
            pg_temp.sub('unmarked_child', ARRAY['done']);
END $$;
SELECT results_eq($$SELECT t.name, k.state::text FROM t JOIN taskforge.tasks k USING (task_id) ORDER BY t.name$$,
                  $$VALUES ('bad'::text, 'FAILED'::text), ('blocked_failed_parent', 'CANCELLED'), ('done', 'SUCCEEDED'),
                           ('healthy_blocked', 'BLOCKED'), ('healthy_cancelled', 'CANCELLED'), ('healthy_queued', 'QUEUED'),
                           ('live_past_blocked', 'BLOCKED'), ('open', 'QUEUED'), ('pending_wrong', 'BLOCKED'), ('pending_zero', 'QUEUED'),
                           ('ran', 'FAILED'), ('unmarked_child', 'QUEUED')$$,
                  'setup: a graph built and run through the API');
SELECT is_empty($$SELECT * FROM taskforge.tf_invariant_violations WHERE task_id IN (SELECT task_id FROM t)$$,
                'a dependency graph handled through the API has no violation');

-- Break one rule per case. None of the rows changed has children, so no trigger reacts.
UPDATE taskforge.tasks SET parents_pending = 2 WHERE task_id = pg_temp.id('pending_wrong');
UPDATE taskforge.tasks SET state = 'BLOCKED', parents_pending = 0 WHERE task_id = pg_temp.id('pending_zero');
UPDATE taskforge.tasks SET state = 'BLOCKED', parents_pending = 1, finished_at = NULL, cancel_requested_at = NULL, cancel_reason = NULL
 WHERE task_id = pg_temp.id('blocked_failed_parent');
UPDATE taskforge.tasks SET state = 'QUEUED', parents_pending = 0 WHERE task_id = pg_temp.id('live_past_blocked');
-- blocked_with_attempts: ran (one FAILED attempt) is made a BLOCKED child of open.
INSERT INTO taskforge.task_dependencies (child_task_id, parent_task_id) VALUES (pg_temp.id('ran'), pg_temp.id('open'));
UPDATE taskforge.tasks SET state = 'BLOCKED', parents_pending = 1, finished_at = NULL WHERE task_id = pg_temp.id('ran');
-- unmarked parent: an edge whose parent is not flagged (done's flag cleared; done never changes state again).
UPDATE taskforge.tasks SET has_children = false WHERE task_id = pg_temp.id('done');

CREATE TEMP TABLE found AS
SELECT t.name, v.rule, v.attempt_number, v.detail FROM taskforge.tf_invariant_violations v JOIN t USING (task_id);
SELECT results_eq($$SELECT rule FROM found WHERE name = 'pending_wrong'$$,
                  ARRAY['blocked task whose parents_pending is not its count of parents not SUCCEEDED'],
                  'BLOCKED with parents_pending 2 and one unfinished parent');
SELECT results_eq($$SELECT detail FROM found WHERE name = 'pending_wrong'$$, ARRAY['parents_pending=2 unfinished parents=1'],
                  'the detail gives both counts');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'pending_zero'$$,
                  ARRAY['blocked task whose parents_pending is not its count of parents not SUCCEEDED'],
                  'BLOCKED though every parent SUCCEEDED');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'blocked_failed_parent'$$,
                  ARRAY['blocked task with a FAILED or CANCELLED parent, or with attempts'], 'BLOCKED below a FAILED parent');
SELECT results_eq($$SELECT rule, detail FROM found WHERE name = 'ran'$$,
                  $$VALUES ('blocked task with a FAILED or CANCELLED parent, or with attempts'::text, 'attempt_count=1'::text)$$,
                  'BLOCKED with an attempt');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'live_past_blocked'$$,
                  ARRAY['live task past its BLOCKED state with a parent not SUCCEEDED'], 'QUEUED with a parent still QUEUED');
SELECT set_eq($$SELECT rule, detail FROM found WHERE name = 'done'$$,
              $$SELECT 'parent of a dependency edge not marked has_children'::text, 'child=' || k.task_id
                  FROM t k WHERE k.name IN ('healthy_blocked', 'healthy_queued', 'pending_wrong', 'pending_zero', 'unmarked_child')$$,
              'an unflagged parent: one row per edge, named by the parent, the child in the detail');
SELECT is_empty($$SELECT * FROM found WHERE name IN ('open', 'bad', 'healthy_blocked', 'healthy_queued', 'healthy_cancelled', 'unmarked_child')$$,
                'the rows not broken by hand have no violation');

-- Restore: delete the broken rows and their edges, flag done again; the view is empty again.
DELETE FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM t WHERE name IN ('pending_wrong', 'pending_zero', 'blocked_failed_parent',
                                                                                  'live_past_blocked', 'ran'));
DELETE FROM taskforge.task_dependencies WHERE child_task_id IN (SELECT task_id FROM t WHERE name IN ('pending_wrong', 'pending_zero',
                                                                                  'blocked_failed_parent', 'live_past_blocked', 'ran'));
UPDATE taskforge.tasks SET has_children = true WHERE task_id = pg_temp.id('done');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
