-- Catch-up policy: ticks missed while no scheduler ran are not replayed one by one; the schedule fires once, for its latest tick at or before now, and its next tick is after now.
BEGIN;
SELECT plan(6);
SET LOCAL TimeZone = 'UTC';
DELETE FROM taskforge.periodic_schedules;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_schedule_periodic('catchup', '*/10 * * * *', 'noop', queue => 'q_catchup');
CREATE TEMP TABLE d AS SELECT * FROM taskforge.tf_schedule_periodic('catchup-days', '0 6 * * *', 'noop', queue => 'q_catchup');
-- Both were last served three days ago: hundreds of ticks of 'catchup' and three of 'catchup-days' were missed.
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('hour', clock_timestamp()) - interval '3 days' WHERE name = 'catchup';
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('day', clock_timestamp()) - interval '3 days' + interval '6 hours' WHERE name = 'catchup-days';
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE e AS SELECT * FROM taskforge.tf_enqueue_periodic();
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE got AS SELECT u.name, u.tick FROM e, unnest(e.names, e.ticks) u(name, tick);

SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_catchup'), 2, 'one task per schedule, not one per missed tick');
SELECT ok((SELECT tick IN (taskforge._tf_cron_latest('*/10 * * * *', (SELECT at FROM t0) - interval '10 minutes', (SELECT at FROM t0), 'UTC'),
                           taskforge._tf_cron_latest('*/10 * * * *', (SELECT at FROM t1) - interval '10 minutes', (SELECT at FROM t1), 'UTC'))
             FROM got WHERE name = 'catchup'),
          'the every-10-minutes schedule fired its latest tick (the last multiple of 10 minutes)');
SELECT is((SELECT tick FROM got WHERE name = 'catchup-days'),
          (SELECT CASE WHEN at >= date_trunc('day', at) + interval '6 hours' THEN date_trunc('day', at) + interval '6 hours'
                       ELSE date_trunc('day', at) - interval '18 hours' END FROM t0),
          'the daily schedule fired its latest 06:00');
SELECT ok((SELECT bool_and(next_fire_at > (SELECT at FROM t0)) FROM taskforge.periodic_schedules), 'both next ticks are after now');
SELECT is((SELECT count(*)::int FROM taskforge.tf_enqueue_periodic() WHERE enqueued = 0), 1, 'nothing more is due');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
