-- tf_periodic lists each schedule with its cron, zone, request, next and last tick, and the id and state of the last tick's task (NULL state once that task is pruned).
BEGIN;
SELECT plan(5);
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_schedule_periodic('view-periodic', '0 * * * *', 'echo', '{"a": 1}', 'q_view_periodic', 3, 2, 'Europe/Berlin');
SELECT results_eq($$SELECT cron, timezone, task_type, queue, priority, max_attempts, payload, next_fire_at, last_fire_at, last_task_id, last_task_state
                      FROM taskforge.tf_periodic WHERE name = 'view-periodic'$$,
                  $$SELECT '0 * * * *'::text, 'Europe/Berlin'::text, 'echo'::text, 'q_view_periodic'::text, 3, 2, '{"a": 1}'::jsonb,
                           next_fire_at, NULL::timestamptz, NULL::bigint, NULL::text FROM s$$,
                  'a new schedule: its definition and next tick, no last tick');
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('hour', clock_timestamp()) WHERE name = 'view-periodic';
-- Only this schedule is due (others' next ticks are moved away inside this transaction).
UPDATE taskforge.periodic_schedules SET next_fire_at = clock_timestamp() + interval '1 day' WHERE name <> 'view-periodic';
CREATE TEMP TABLE e AS SELECT * FROM taskforge.tf_enqueue_periodic();
SELECT results_eq($$SELECT last_fire_at, last_task_id, last_task_state FROM taskforge.tf_periodic WHERE name = 'view-periodic'$$,
                  $$SELECT ticks[1], task_ids[1], 'QUEUED'::text FROM e$$, 'after a tick: its instant, task and the task''s state');
SELECT ok((SELECT next_fire_at > clock_timestamp() FROM taskforge.tf_periodic WHERE name = 'view-periodic'), 'next_fire_at moved past now');
SELECT is_empty($$SELECT 1 FROM taskforge.tf_periodic WHERE name = 'no-such-schedule'$$, 'one row per schedule only');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
