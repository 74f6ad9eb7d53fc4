-- tf_set_queue_limit: a limited queue never has more than max_running tasks RUNNING; a finish frees room; NULL removes the limit; other queues are not limited; the previous limit is returned.
BEGIN;
SELECT plan(12);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_limit') AS id;
CREATE TEMP TABLE t AS
SELECT (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', n), 'q_limit', priority => 5)) AS task_id
  FROM generate_series(1, 5) n;
INSERT INTO t SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_limit_free');

SELECT is(taskforge.tf_set_queue_limit('q_limit', 2), NULL::int, 'setting a first limit returns NULL (was unlimited)');
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_limit'], max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c1), 2, 'a claim of ten takes only max_running = 2');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_limit'], max_tasks => 10)), 0,
          'at the limit a claim takes nothing');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 10);
SELECT results_eq('SELECT queue FROM c2', ARRAY['q_limit_free'], 'an unfiltered claim still takes other queues'' tasks');
SELECT lives_ok($$SELECT * FROM taskforge.tf_finalize((SELECT min(task_id) FROM c1), (SELECT id FROM w), 1, 'succeeded')$$,
                'finish one of the two');
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c3), 1, 'one finish frees exactly one place');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_limit' AND state = 'RUNNING'), 2,
          'still two RUNNING');
SELECT is(taskforge.tf_set_queue_limit('q_limit', 3), 2, 'raising the limit returns the previous one');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_limit', 'q_other'], max_tasks => 10)), 1,
          'a raised limit admits one more (several-queue claim)');
SELECT is(taskforge.tf_set_queue_limit('q_limit', NULL), 3, 'clearing the limit returns the previous one');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_limit'], max_tasks => 10)), 1,
          'unlimited again: the last task is claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
