-- _tf_release_children (trigger tasks_release_children), driven through tf_claim/tf_finalize/tf_recover: a child becomes QUEUED in the transaction of its last parent's success and not before (a parent RUNNING, RETRYING or requeued by recovery counts as unfinished), due at its own scheduled_at, updated at the parent's instant; a task without children never calls the trigger function.
BEGIN;
SELECT plan(16);
SET LOCAL track_functions = 'pl';
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('release-w1') AS id;
-- Parents a, b, c; child d on all three; child later on a only, due in an hour.
CREATE TEMP TABLE p AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', queue => 'release_' || s.name, max_attempts => 3)) AS task_id
  FROM (VALUES ('a'), ('b'), ('c')) s(name);
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM p WHERE name = p_name $helper$;
CREATE TEMP TABLE d AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'release_child',
    depends_on => ARRAY[pg_temp.id('a'), pg_temp.id('b'), pg_temp.id('c')]);
CREATE TEMP TABLE later AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'release_later', delay_seconds => 3600,
    depends_on => ARRAY[pg_temp.id('a')]);
CREATE FUNCTION pg_temp.child() RETURNS TABLE(state text, parents_pending int) LANGUAGE sql AS $helper$
    SELECT t.state::text, t.parents_pending FROM taskforge.tasks t WHERE t.task_id = (SELECT task_id FROM d)
$helper$;
CREATE FUNCTION pg_temp.trigger_calls() RETURNS bigint LANGUAGE sql AS $helper$
    SELECT coalesce((SELECT calls FROM pg_catalog.pg_stat_xact_user_functions
                      WHERE schemaname = 'taskforge' AND funcname = '_tf_release_children'), 0)
$helper$;
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('BLOCKED'::text, 3)$$, 'setup: the child waits for three parents');

-- All three RUNNING: nothing yet.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_a', 'release_b', 'release_c'], max_tasks => 3);
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('BLOCKED'::text, 3)$$, 'claimed parents are unfinished: still 3');
-- a SUCCEEDED: one fewer; the child is updated at a's instant.
CREATE TEMP TABLE fa AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('a'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('BLOCKED'::text, 2)$$, 'a SUCCEEDED: the child waits for 2');
SELECT is((SELECT updated_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM d)),
          (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id('a')), 'the child was updated at a''s finish');
-- b fails with a retryable error (RETRYING), c loses its lease and is requeued: neither counts.
CREATE TEMP TABLE fb AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('b'), (SELECT id FROM w), 1, 'retryable');
UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = pg_temp.id('c');
UPDATE taskforge.attempts SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE task_id = pg_temp.id('c');
CREATE TEMP TABLE rc AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq($$SELECT p.name, t.state::text FROM p JOIN taskforge.tasks t USING (task_id) ORDER BY p.name$$,
                  $$VALUES ('a'::text, 'SUCCEEDED'::text), ('b', 'RETRYING'), ('c', 'QUEUED')$$, 'setup: b RETRYING, c requeued');
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('BLOCKED'::text, 2)$$, 'RETRYING and requeued parents do not count: still 2');
-- b runs again and succeeds; c succeeds: the child is released by c's finalize.
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() WHERE task_id = pg_temp.id('b');
CREATE TEMP TABLE pr AS SELECT * FROM taskforge.tf_promote();
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_b', 'release_c'], max_tasks => 2);
CREATE TEMP TABLE fb2 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('b'), (SELECT id FROM w), 2, 'succeeded');
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('BLOCKED'::text, 1)$$, 'b SUCCEEDED at its second attempt: 1 left');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_child'])$$, 'the child is not claimable yet');
CREATE TEMP TABLE fc AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('c'), (SELECT id FROM w), 2, 'succeeded');
SELECT results_eq('SELECT * FROM pg_temp.child()', $$VALUES ('QUEUED'::text, 0)$$, 'the last parent SUCCEEDED: QUEUED, none pending');
SELECT ok((SELECT t.updated_at = (SELECT finished_at FROM taskforge.tasks WHERE task_id = pg_temp.id('c'))
                  AND t.scheduled_at < t.updated_at AND t.attempt_count = 0
             FROM taskforge.tasks t WHERE t.task_id = (SELECT task_id FROM d)),
          'released at c''s finish, due at its own scheduled_at (its submit), no attempt yet');
SELECT results_eq($$SELECT task_id, attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_child'])$$,
                  $$SELECT task_id, 1 FROM d$$, 'the released child is claimed: attempt 1');
-- The child due in an hour was released by a, but waits for its own time.
SELECT results_eq($$SELECT t.state::text, t.scheduled_at > clock_timestamp() + interval '50 minutes' FROM later JOIN taskforge.tasks t USING (task_id)$$,
                  $$VALUES ('QUEUED'::text, true)$$, 'a child with a delay is QUEUED with its own scheduled_at');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_later'])$$, 'and not claimed before it');

-- A task without children: its transitions never call the trigger function (WHEN (new.has_children)).
CREATE TEMP TABLE calls0 AS SELECT pg_temp.trigger_calls() AS n;
SELECT is((SELECT n FROM calls0), 11::bigint,
          'the parents'' state changes called it 11 times (a: 2, b: claim, retry, promote, claim, finalize, c: claim, recover, claim, finalize)');
CREATE TEMP TABLE lone AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'release_lone');
CREATE TEMP TABLE cl AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['release_lone']);
CREATE TEMP TABLE fl AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM lone), (SELECT id FROM w), 1, 'failed');
CREATE TEMP TABLE calls1 AS SELECT pg_temp.trigger_calls() AS n;
CREATE TEMP TABLE fd AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM d), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT (SELECT n FROM calls1) - (SELECT n FROM calls0), pg_temp.trigger_calls() - (SELECT n FROM calls1)$$,
                  $$VALUES (0::bigint, 0::bigint)$$, 'a childless task''s claim and finalize call it 0 times (nor does the child''s)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
