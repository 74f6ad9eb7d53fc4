-- A BLOCKED task is never claimed, due or not, keyed or not, by tf_claim (with and without a queue filter) or tf_finalize_and_claim, nor promoted; once its last parent SUCCEEDED it is QUEUED and the next claim takes it.
BEGIN;
SELECT plan(11);
-- The claims below take from every queue: remove other rows inside this transaction (rolled back at the end).
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('submit-blocked-w1') AS id;
-- The parent is not due for an hour; its children are due now (and one long ago).
CREATE TEMP TABLE parent AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'submit_blocked_parent', delay_seconds => 3600);
CREATE TEMP TABLE kids AS
SELECT s.name, r.task_id, r.state
  FROM (VALUES ('plain', NULL::text, NULL::text, NULL::text, NULL::timestamptz),
               ('past', NULL, NULL, NULL, clock_timestamp() - interval '1 day'),
               ('rate', 'submit-blocked-r', NULL, NULL, NULL),
               ('concurrency', NULL, 'submit-blocked-c', NULL, NULL),
               ('ordering', NULL, NULL, 'submit-blocked-o', NULL)) s(name, rk, ck, ok, at)
 CROSS JOIN LATERAL taskforge.tf_submit('noop', jsonb_build_object('kid', s.name), 'submit_blocked', scheduled_at => s.at,
                                        depends_on => ARRAY[(SELECT task_id FROM parent)], rate_key => s.rk, concurrency_key => s.ck,
                                        ordering_key => s.ok) r;

SELECT results_eq($$SELECT count(*)::int, count(*) FILTER (WHERE state = 'BLOCKED')::int FROM kids$$, $$VALUES (5, 5)$$,
                  'setup: five BLOCKED children, three of them keyed');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), max_tasks => 100)$$, 'a claim of every queue takes none');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_blocked'], max_tasks => 100)$$,
                'a claim of their queue takes none');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_blocked'], max_tasks => 100, task_types => ARRAY['noop'])$$,
                'a claim of their queue and type takes none');
SELECT is_empty($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['submit_blocked'],
                                                                  max_tasks => 100)$$,
                'tf_finalize_and_claim takes none');
SELECT results_eq('SELECT promoted FROM taskforge.tf_promote()', ARRAY[0], 'tf_promote promotes none');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE state = 'BLOCKED'), 5, 'all five are still BLOCKED');
SELECT is_empty('SELECT * FROM taskforge.attempts', 'and no attempt was created');

-- The parent runs and succeeds: the children are QUEUED and claimable.
UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() WHERE task_id = (SELECT task_id FROM parent);
CREATE TEMP TABLE cp AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_blocked_parent']);
CREATE TEMP TABLE fp AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM parent), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq('SELECT task_id, task_state FROM cp JOIN fp ON true', $$SELECT task_id, 'SUCCEEDED'::text FROM parent$$,
                  'the parent is claimed and SUCCEEDED');
SELECT results_eq($$SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['submit_blocked'], max_tasks => 100) ORDER BY task_id$$,
                  $$SELECT task_id FROM kids ORDER BY task_id$$, 'released, all five children are claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
