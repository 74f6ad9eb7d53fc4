-- One RETRYING task that cannot be promoted (a trigger refuses its update) never stops the others: it is skipped and listed in tf_maintenance_errors, left out of the next calls until its retry_after (next_due_at does not point at it meanwhile), and its entry goes once it is promoted.
BEGIN;
SELECT plan(11);
-- tf_promote acts on every queue: remove other rows inside this transaction (rolled back at the end) so counts are exact.
DELETE FROM taskforge.tasks;
CREATE FUNCTION public.tftest_refuse_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF new.task_id = nullif(current_setting('tftest.bad_task', true), '')::bigint THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = format('tftest: task %s refused', new.task_id);
    END IF;
    RETURN new;
END $$;
CREATE TRIGGER tftest_refuse_task BEFORE UPDATE ON taskforge.tasks FOR EACH ROW EXECUTE FUNCTION public.tftest_refuse_task();
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('promote-bad-row-w1') AS id;
CREATE TEMP TABLE sub AS
SELECT n, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('n', n), queue => 'promote_bad_row')) AS task_id
  FROM generate_series(1, 3) n;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['promote_bad_row'], max_tasks => 3);
CREATE TEMP TABLE f AS
SELECT k.* FROM sub s CROSS JOIN LATERAL taskforge.tf_finalize(s.task_id, (SELECT id FROM w), 1, 'retryable', error => '{"type": "transient"}') k;
-- Task n's backoff ended 4 - n minutes ago: task 1, the bad one, is the earliest, first in every batch.
UPDATE taskforge.tasks t SET scheduled_at = clock_timestamp() - make_interval(mins => 4 - s.n) FROM sub s WHERE t.task_id = s.task_id;
-- In a DO block: a bare SELECT would print the task id, and an id such as 1402 reads as a TAP plan line.
DO $$ BEGIN PERFORM set_config('tftest.bad_task', (SELECT task_id FROM sub WHERE n = 1)::text, true); END $$;

CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_promote(max_tasks => 2);
SELECT results_eq('SELECT accepted, task_state FROM f', $$VALUES (true, 'RETRYING'::text), (true, 'RETRYING'), (true, 'RETRYING')$$,
                  'setup: three RETRYING tasks');
SELECT is((SELECT promoted FROM r1), 1, 'the call succeeds and promotes the good task of the batch');
SELECT results_eq($$SELECT s.n, t.state::text FROM sub s JOIN taskforge.tasks t USING (task_id) ORDER BY s.n$$,
                  $$VALUES (1, 'RETRYING'::text), (2, 'QUEUED'), (3, 'RETRYING')$$,
                  'the bad task is untouched, the second promoted, the third not in the batch');
SELECT results_eq($$SELECT sweep, task_id, schedule_name, sqlstate, message, failures FROM taskforge.tf_maintenance_errors$$,
                  $$SELECT 'tf_promote'::text, task_id, NULL::text, 'P0001'::text, format('tftest: task %s refused', task_id), 1
                      FROM sub WHERE n = 1$$,
                  'the bad task is listed in tf_maintenance_errors');

CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_promote(max_tasks => 2);
SELECT is((SELECT promoted FROM r2), 1, 'the next batch skips the bad task and promotes the third');
SELECT is((SELECT failures FROM taskforge.tf_maintenance_errors), 1, 'the bad task was not tried again before its retry_after');
SELECT is((SELECT next_due_at FROM r2), (SELECT retry_after FROM taskforge.tf_maintenance_errors),
          'next_due_at is the bad task''s retry_after, not its backoff end long past');

-- Repaired, and its retry time come (simulated): promoted, entry gone.
DROP TRIGGER tftest_refuse_task ON taskforge.tasks;
UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours',
       last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second';
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_promote();
SELECT is((SELECT promoted FROM r3), 1, 'once repaired, the task is promoted');
SELECT is((SELECT state FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM sub WHERE n = 1)), 'QUEUED', 'the bad task is QUEUED now');
SELECT is_empty('SELECT * FROM taskforge.tf_maintenance_errors', 'its entry is gone');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
