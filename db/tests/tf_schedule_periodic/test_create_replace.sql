-- tf_schedule_periodic creates a schedule (defaults, first tick after now, in its zone) and replaces it by name: the same cron and zone keep the next tick, a new cron or zone starts again from now; enqueued tasks are not touched.
BEGIN;
SELECT plan(17);
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_schedule_periodic('sched-create', '0 3 * * *', 'noop');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE v1 AS SELECT * FROM taskforge.periodic_schedules WHERE name = 'sched-create';

SELECT is((SELECT created FROM r1), true, 'a new name creates a schedule');
SELECT is((SELECT count(*)::int FROM v1), 1, 'one row');
SELECT results_eq('SELECT cron, task_type, payload::jsonb, queue::text, priority::int, max_attempts, timezone FROM v1',
                  $$VALUES ('0 3 * * *'::text, 'noop'::text, '{}'::jsonb, 'default'::text, 0, 3, 'UTC'::text)$$,
                  'defaults: payload {}, queue default, priority 0, max_attempts 3, timezone UTC');
SELECT is((SELECT next_fire_at FROM r1), (SELECT next_fire_at FROM v1), 'the call returns the stored next tick');
SELECT is((SELECT next_fire_at FROM v1), taskforge._tf_cron_next('0 3 * * *', (SELECT at FROM t0), 'UTC'),
          'the next tick is the first 03:00 UTC after the call');
SELECT ok((SELECT next_fire_at > (SELECT at FROM t1) AND next_fire_at <= (SELECT at FROM t1) + interval '1 day' FROM v1),
          'within the next day');
SELECT ok((SELECT last_fire_at IS NULL AND last_task_id IS NULL FROM v1), 'no tick fired yet');
SELECT ok((SELECT created_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) AND updated_at = created_at FROM v1),
          'created_at = updated_at = database time of the call');

-- A tick is due and not yet enqueued (no scheduler ran): replacing with the same cron keeps it.
UPDATE taskforge.periodic_schedules SET next_fire_at = clock_timestamp() - interval '1 hour' WHERE name = 'sched-create';
CREATE TEMP TABLE due AS SELECT next_fire_at FROM taskforge.periodic_schedules WHERE name = 'sched-create';
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_schedule_periodic('sched-create', '0 3 * * *', 'echo', '{"v": 2}', 'q_sched_create', 5, 7);
SELECT is((SELECT created FROM r2), false, 'the same name replaces the schedule');
SELECT results_eq($$SELECT task_type, payload::jsonb, queue::text, priority::int, max_attempts::int FROM taskforge.periodic_schedules WHERE name = 'sched-create'$$,
                  $$VALUES ('echo'::text, '{"v": 2}'::jsonb, 'q_sched_create'::text, 5, 7)$$, 'the request is replaced');
SELECT is((SELECT next_fire_at FROM r2), (SELECT next_fire_at FROM due), 'same cron and zone: the due tick is kept (it will still fire)');
SELECT is((SELECT created_at FROM taskforge.periodic_schedules WHERE name = 'sched-create'), (SELECT created_at FROM v1), 'created_at is kept');
SELECT ok((SELECT updated_at > (SELECT updated_at FROM v1) FROM taskforge.periodic_schedules WHERE name = 'sched-create'), 'updated_at moves on');

CREATE TEMP TABLE t2 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_schedule_periodic('sched-create', '0 3 * * *', 'echo', timezone => 'America/New_York');
SELECT is((SELECT next_fire_at FROM r3), taskforge._tf_cron_next('0 3 * * *', (SELECT at FROM t2), 'America/New_York'),
          'a new zone: the first 03:00 in New York after now');
CREATE TEMP TABLE t3 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r4 AS SELECT * FROM taskforge.tf_schedule_periodic('sched-create', '*/5 * * * *', 'echo', timezone => 'America/New_York');
SELECT ok((SELECT next_fire_at > (SELECT at FROM t3) AND next_fire_at <= (SELECT at FROM t3) + interval '5 minutes' FROM r4),
          'a new cron: its first tick after now');
SELECT is((SELECT count(*)::int FROM taskforge.periodic_schedules WHERE name = 'sched-create'), 1, 'still one schedule of that name');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
