-- One periodic schedule that cannot be enqueued (a trigger refuses its update) never stops the others: it is skipped, its next_fire_at unchanged, listed in tf_maintenance_errors by name, left out of the next calls until its retry_after (next_fire_at does not point at it meanwhile), and once repaired its latest tick is enqueued and its entry goes.
BEGIN;
SELECT plan(11);
SET LOCAL TimeZone = 'UTC';
DELETE FROM taskforge.periodic_schedules;
CREATE FUNCTION public.tftest_refuse_schedule() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF new.name = current_setting('tftest.bad_schedule', true) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = format('tftest: schedule %s refused', new.name);
    END IF;
    RETURN new;
END $$;
CREATE TRIGGER tftest_refuse_schedule BEFORE UPDATE ON taskforge.periodic_schedules FOR EACH ROW
    EXECUTE FUNCTION public.tftest_refuse_schedule();
CREATE TEMP TABLE s AS
SELECT n, (SELECT next_fire_at FROM taskforge.tf_schedule_periodic('bad-row-' || n, '0 * * * *', 'noop', jsonb_build_object('n', n), 'q_bad_row')) AS first_tick
  FROM generate_series(1, 3) n;
-- Schedule n became due 3 - n hours ago (at the latest tick): bad-row-1, the bad one, is the earliest, first in every batch.
UPDATE taskforge.periodic_schedules p SET next_fire_at = date_trunc('hour', clock_timestamp()) - make_interval(hours => 3 - s.n)
  FROM s WHERE p.name = 'bad-row-' || s.n;
SELECT set_config('tftest.bad_schedule', 'bad-row-1', true);
CREATE TEMP TABLE due_before AS SELECT next_fire_at FROM taskforge.periodic_schedules WHERE name = 'bad-row-1';

CREATE TEMP TABLE e1 AS SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 2);
SELECT results_eq('SELECT enqueued, names FROM e1', $$VALUES (1, ARRAY['bad-row-2'])$$,
                  'the call succeeds and enqueues the good schedule of the batch');
SELECT is((SELECT next_fire_at FROM taskforge.periodic_schedules WHERE name = 'bad-row-1'), (SELECT next_fire_at FROM due_before),
          'the bad schedule is untouched (its next_fire_at unchanged)');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_bad_row'), 1, 'one task: the bad schedule''s was rolled back');
SELECT results_eq($$SELECT sweep, task_id, schedule_name, sqlstate, message, failures FROM taskforge.tf_maintenance_errors$$,
                  $$VALUES ('tf_enqueue_periodic'::text, NULL::bigint, 'bad-row-1'::text, 'P0001'::text, 'tftest: schedule bad-row-1 refused'::text, 1)$$,
                  'the bad schedule is listed in tf_maintenance_errors by name');

CREATE TEMP TABLE e2 AS SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 2);
SELECT results_eq('SELECT enqueued, names FROM e2', $$VALUES (1, ARRAY['bad-row-3'])$$,
                  'the next batch skips the bad schedule and enqueues the third');
SELECT is((SELECT failures FROM taskforge.tf_maintenance_errors), 1, 'the bad schedule was not tried again before its retry_after');
SELECT is((SELECT next_fire_at FROM e2),
          (SELECT least(e.retry_after, (SELECT min(p.next_fire_at) FROM taskforge.periodic_schedules p WHERE p.name <> 'bad-row-1'))
             FROM taskforge.tf_maintenance_errors e),
          'next_fire_at is the bad schedule''s retry_after or the others'' next tick, not the bad one''s tick long past');

-- Repaired, and its retry time come (simulated): its latest tick is enqueued, entry gone.
DROP TRIGGER tftest_refuse_schedule ON taskforge.periodic_schedules;
UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours',
       last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second';
CREATE TEMP TABLE e3 AS SELECT * FROM taskforge.tf_enqueue_periodic();
SELECT results_eq('SELECT enqueued, names, ticks FROM e3', $$VALUES (1, ARRAY['bad-row-1'], ARRAY[date_trunc('hour', clock_timestamp())])$$,
                  'once repaired, the schedule fires its latest tick (catch-up)');
SELECT ok((SELECT next_fire_at > clock_timestamp() FROM taskforge.periodic_schedules WHERE name = 'bad-row-1'), 'and moves on');
SELECT is_empty('SELECT * FROM taskforge.tf_maintenance_errors', 'its entry is gone');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
