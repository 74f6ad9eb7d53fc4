-- One task that cannot be recovered (a trigger refuses its update) never stops the others: it is skipped and listed in tf_maintenance_errors, left out of the next calls until its retry_after (so a batch starting with it recovers the tasks after it), counted again when retried, and its entry goes once it is recovered; an error that is not about a row (40001) fails the call and records nothing.
BEGIN;
SELECT plan(17);
-- tf_recover acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
-- The bad row: a trigger a table owner wrote that refuses updates of one task (tftest.bad_task) with SQLSTATE tftest.errcode.
CREATE FUNCTION public.tftest_refuse_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF new.task_id = nullif(current_setting('tftest.bad_task', true), '')::bigint THEN
        RAISE EXCEPTION USING ERRCODE = current_setting('tftest.errcode'), MESSAGE = format('tftest: task %s refused', new.task_id);
    END IF;
    RETURN new;
END $$;
CREATE TRIGGER tftest_refuse_task BEFORE UPDATE ON taskforge.tasks FOR EACH ROW EXECUTE FUNCTION public.tftest_refuse_task();
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('recover-bad-row-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', n), queue => 'recover_bad_row')) AS task_id
  FROM generate_series(1, 3) n;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['recover_bad_row'], max_tasks => 3);
-- Task n's lease expired 4 - n minutes ago: task 1, the bad one, is the oldest, first in every batch.
UPDATE taskforge.tasks t SET lease_expires_at = clock_timestamp() - make_interval(mins => 4 - s.n) FROM sub s WHERE t.task_id = s.task_id;
UPDATE taskforge.attempts x SET lease_expires_at = t.lease_expires_at FROM taskforge.tasks t JOIN sub s USING (task_id) WHERE x.task_id = t.task_id;
-- In a DO block: a bare SELECT would print the task id, and an id such as 1402 reads as a TAP plan line.
DO $$ BEGIN PERFORM set_config('tftest.bad_task', (SELECT task_id FROM sub WHERE n = 1)::text, true); END $$;
SELECT set_config('tftest.errcode', 'P0001', true);

-- A batch of two starting with the bad task: the fallback recovers the other one.
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_recover(max_tasks => 2);
SELECT results_eq('SELECT recovered, failed FROM r1', $$VALUES (1, 0)$$, 'the call succeeds and recovers the good task of the batch');
SELECT results_eq($$SELECT s.n, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.n$$,
                  $$VALUES (1, 'RUNNING'::text), (2, 'QUEUED'), (3, 'RUNNING')$$,
                  'the bad task is untouched, the second recovered, the third not in the batch');
SELECT is((SELECT state FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub WHERE n = 1)), 'RUNNING',
          'the bad task''s attempt is untouched (its subtransaction rolled back)');
SELECT results_eq($$SELECT sweep, task_id, schedule_name, sqlstate, message, failures FROM taskforge.tf_maintenance_errors$$,
                  $$SELECT 'tf_recover'::text, task_id, NULL::text, 'P0001'::text, format('tftest: task %s refused', task_id), 1
                      FROM sub WHERE n = 1$$,
                  'the bad task is listed in tf_maintenance_errors with its SQLSTATE and message');
SELECT ok((SELECT retry_after >= last_seen_at + interval '60 seconds' AND first_seen_at = last_seen_at FROM taskforge.tf_maintenance_errors),
          'first failure: retried after 60 s');

-- The next call leaves the bad task out: the third task is recovered, the bad one is not retried.
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_recover(max_tasks => 2);
SELECT results_eq('SELECT recovered, failed FROM r2', $$VALUES (1, 0)$$, 'the next batch skips the bad task and recovers the third');
SELECT is((SELECT failures FROM taskforge.tf_maintenance_errors), 1, 'the bad task was not tried again before its retry_after');
SELECT is((SELECT next_lease_expiry FROM r2), (SELECT retry_after FROM taskforge.tf_maintenance_errors),
          'next_lease_expiry is the bad task''s retry_after, not its lease long past (no busy loop)');

-- Its retry time comes (simulated): tried again, still failing: counted, retried later, the call still succeeds.
UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours',
       last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second';
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq('SELECT recovered, failed FROM r3', $$VALUES (0, 0)$$, 'a retry that fails again recovers nothing and raises nothing');
SELECT ok((SELECT failures = 2 AND retry_after >= last_seen_at + interval '120 seconds' FROM taskforge.tf_maintenance_errors),
          'second failure: counted, retried after 120 s');

-- An error that is not about a row (a serialization failure) fails the call as before and records nothing.
UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours',
       last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second';
SELECT set_config('tftest.errcode', '40001', true);
SELECT throws_ok('SELECT * FROM taskforge.tf_recover()', '40001', NULL, 'a serialization failure fails the whole call');
SELECT is((SELECT failures FROM taskforge.tf_maintenance_errors), 2, 'and is not recorded as a bad row');

-- The row is repaired (the trigger dropped): at its retry time it is recovered and its entry goes.
DROP TRIGGER tftest_refuse_task ON taskforge.tasks;
CREATE TEMP TABLE r4 AS SELECT * FROM taskforge.tf_recover();
SELECT results_eq('SELECT recovered, failed FROM r4', $$VALUES (1, 0)$$, 'once repaired, the task is recovered');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub WHERE n = 1)), 'QUEUED', 'the bad task is QUEUED now');
SELECT is_empty('SELECT * FROM taskforge.tf_maintenance_errors', 'its entry is gone');
SELECT is((SELECT next_lease_expiry FROM r4), NULL, 'nothing is left to recover');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
