-- One old task that cannot be deleted (a trigger refuses its delete) never stops the others: it is skipped and listed in tf_maintenance_errors, left out of the next calls until its retry_after, and its entry goes once it is deleted; its attempts stay with it meanwhile.
BEGIN;
SELECT plan(10);
-- tf_prune acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE FUNCTION public.tftest_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF old.task_id = nullif(current_setting('tftest.bad_task', true), '')::bigint THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = format('tftest: task %s refused', old.task_id);
    END IF;
    RETURN old;
END $$;
CREATE TRIGGER tftest_refuse_delete BEFORE DELETE ON taskforge.tasks FOR EACH ROW EXECUTE FUNCTION public.tftest_refuse_delete();
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('prune-bad-row-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', n), queue => 'prune_bad_row')) AS task_id
  FROM generate_series(1, 3) n;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['prune_bad_row'], max_tasks => 3);
CREATE TEMP TABLE f AS
SELECT k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, 'succeeded') k;
-- Task n finished 4 - n hours ago: task 1, the bad one, is the oldest, first in every batch.
UPDATE taskforge.tasks t SET finished_at = clock_timestamp() - make_interval(hours => 4 - s.n) FROM sub s WHERE t.task_id = s.task_id;
-- In a DO block: a bare SELECT would print the task id, and an id such as 1402 reads as a TAP plan line.
DO $$ BEGIN PERFORM set_config('tftest.bad_task', (SELECT task_id FROM sub WHERE n = 1)::text, true); END $$;

SELECT is(taskforge.tf_prune(older_than_seconds => 60, max_tasks => 2), 1, 'the call succeeds and deletes the good task of the batch');
SELECT results_eq($$SELECT s.n FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.n$$, $$VALUES (1), (3)$$,
                  'the bad task stays, the second is deleted, the third was not in the batch');
SELECT is((SELECT count(*)::int FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM sub WHERE n = 1)), 1,
          'the bad task keeps its attempt (its subtransaction rolled back)');
SELECT results_eq($$SELECT sweep, task_id, schedule_name, sqlstate, message, failures FROM taskforge.tf_maintenance_errors$$,
                  $$SELECT 'tf_prune'::text, task_id, NULL::text, 'P0001'::text, format('tftest: task %s refused', task_id), 1
                      FROM sub WHERE n = 1$$,
                  'the bad task is listed in tf_maintenance_errors');

SELECT is(taskforge.tf_prune(older_than_seconds => 60, max_tasks => 2), 1, 'the next batch skips the bad task and deletes the third');
SELECT is((SELECT failures FROM taskforge.tf_maintenance_errors), 1, 'the bad task was not tried again before its retry_after');

-- Repaired, and its retry time come (simulated): deleted, entry gone.
DROP TRIGGER tftest_refuse_delete ON taskforge.tasks;
UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours',
       last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second';
SELECT is(taskforge.tf_prune(older_than_seconds => 60), 1, 'once repaired, the task is deleted');
SELECT is_empty($$SELECT 1 FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub WHERE n = 1)$$, 'the bad task is gone');
SELECT is_empty('SELECT * FROM taskforge.tf_maintenance_errors', 'its entry is gone');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
