-- tf_recover: max_tasks bounds the batch, the oldest deadlines go first, and next_lease_expiry is the earliest lease still running (NULL when none).
BEGIN;
SELECT plan(12);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-batch-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', s.n), queue => 'recover_batch', priority => 10 - s.n)) AS task_id
  FROM generate_series(1, 4) s(n);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_batch'], lease_seconds => 300, max_tasks => 4);
-- Tasks 1..3 expired 30, 20 and 10 seconds ago; task 4 keeps its 300 s lease.
CREATE TEMP TABLE deadline AS
SELECT n, task_id, clock_timestamp() - make_interval(secs => 40 - 10 * n) AS at FROM sub WHERE n <= 3;
UPDATE taskforge.tasks t SET lease_expires_at = d.at FROM deadline d WHERE t.task_id = d.task_id;
UPDATE taskforge.attempts x SET lease_expires_at = d.at FROM deadline d WHERE x.task_id = d.task_id;
CREATE TEMP TABLE lease4 AS SELECT lease_expires_at FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub WHERE n = 4);

CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_recover(max_tasks => 2);
SELECT is((SELECT count(*)::int FROM c), 4, 'setup: four tasks claimed');
SELECT results_eq('SELECT recovered, failed FROM r1', $$VALUES (2, 0)$$, 'max_tasks => 2 recovers two tasks');
SELECT results_eq($$SELECT n FROM sub JOIN taskforge.tasks t USING (task_id) WHERE t.state = 'QUEUED' ORDER BY n$$,
                  ARRAY[1, 2], 'the two oldest deadlines were recovered first');
SELECT is((SELECT next_lease_expiry FROM r1), (SELECT at FROM deadline WHERE n = 3),
          'next_lease_expiry is the earliest lease still running (already expired, left for the next call)');

CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_recover(max_tasks => 2);
SELECT results_eq('SELECT recovered, failed FROM r2', $$VALUES (1, 0)$$, 'the next call recovers the remaining expired task');
SELECT is((SELECT next_lease_expiry FROM r2), (SELECT lease_expires_at FROM lease4),
          'next_lease_expiry is now the valid lease of task 4');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub WHERE n = 4)), 'RUNNING',
          'the task with a valid lease is still RUNNING');

CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_recover(max_tasks => 1);
SELECT results_eq('SELECT recovered, failed FROM r3', $$VALUES (0, 0)$$, 'no expired lease left');

-- Finish the last running task: no lease remains at all.
SELECT results_eq($$SELECT accepted FROM taskforge.tf_finalize((SELECT task_id FROM sub WHERE n = 4), (SELECT id FROM w), 1, 'succeeded')$$,
                  ARRAY[true], 'setup: task 4 finalized');
SELECT results_eq('SELECT recovered, failed, next_lease_expiry FROM taskforge.tf_recover()', $$VALUES (0, 0, NULL::timestamptz)$$,
                  'next_lease_expiry is NULL when nothing is running');
SELECT is((SELECT count(*)::int FROM taskforge.attempts x JOIN sub USING (task_id) WHERE x.state = 'ABANDONED'), 3,
          'exactly three attempts were abandoned');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
