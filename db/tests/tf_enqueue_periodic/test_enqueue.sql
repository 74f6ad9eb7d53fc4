-- tf_enqueue_periodic submits one task per due schedule with the schedule's request, scheduled_at = the tick and the key periodic:<name>:<tick UTC>, records the tick and advances next_fire_at past now; schedules not due are untouched; a second call enqueues nothing.
BEGIN;
SELECT plan(18);
SET LOCAL TimeZone = 'UTC';
-- tf_enqueue_periodic acts on every schedule: remove other rows inside this transaction (rolled back at the end).
DELETE FROM taskforge.periodic_schedules;
CREATE TEMP TABLE s1 AS SELECT * FROM taskforge.tf_schedule_periodic('enq-hourly', '0 * * * *', 'echo', '{"report": "hourly"}', 'q_enq', 7, 4);
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_schedule_periodic('enq-later', '0 0 1 1 *', 'noop', queue => 'q_enq');
-- enq-hourly's 02:00-ago tick is due (no scheduler has run since): its latest tick is the start of this hour.
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('hour', clock_timestamp()) WHERE name = 'enq-hourly';
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE e AS SELECT * FROM taskforge.tf_enqueue_periodic();
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE task AS SELECT * FROM taskforge.tasks WHERE queue = 'q_enq';

SELECT is((SELECT enqueued FROM e), 1, 'one due schedule: one tick enqueued');
SELECT is((SELECT names FROM e), ARRAY['enq-hourly'], 'names lists the schedule');
SELECT is((SELECT count(*)::int FROM task), 1, 'one task was created');
SELECT is((SELECT task_ids FROM e), ARRAY[(SELECT task_id FROM task)], 'task_ids lists its id');
SELECT results_eq('SELECT task_type, payload::jsonb, priority::int, max_attempts::int, state::text, attempt_count FROM task',
                  $$VALUES ('echo'::text, '{"report": "hourly"}'::jsonb, 7, 4, 'QUEUED'::text, 0)$$,
                  'the task carries the schedule''s request and is QUEUED');
SELECT ok((SELECT ticks[1] IN (date_trunc('hour', (SELECT at FROM t0)), date_trunc('hour', (SELECT at FROM t1))) FROM e),
          'the tick is the start of this hour');
SELECT is((SELECT scheduled_at FROM task), (SELECT ticks[1] FROM e), 'scheduled_at is the tick (due at once)');
SELECT is((SELECT idempotency_key::text FROM task),
          (SELECT 'periodic:enq-hourly:' || to_char(ticks[1] AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM e),
          'the idempotency key is periodic:<name>:<tick in UTC>');
SELECT ok((SELECT fingerprint IS NOT NULL FROM task), 'the key is held with the request''s fingerprint, as tf_submit stores it');
CREATE TEMP TABLE after1 AS SELECT * FROM taskforge.periodic_schedules WHERE name = 'enq-hourly';
SELECT results_eq('SELECT last_fire_at, last_task_id FROM after1', 'SELECT ticks[1], task_ids[1] FROM e',
                  'last_fire_at and last_task_id record the tick and its task');
SELECT is((SELECT next_fire_at FROM after1), (SELECT ticks[1] FROM e) + interval '1 hour', 'next_fire_at is the next hour');
SELECT is((SELECT next_fire_at FROM e), (SELECT least(a.next_fire_at, b.next_fire_at) FROM after1 a, taskforge.periodic_schedules b WHERE b.name = 'enq-later'),
          'next_fire_at of the call is the earliest next tick of all schedules');
SELECT results_eq($$SELECT next_fire_at, last_fire_at FROM taskforge.periodic_schedules WHERE name = 'enq-later'$$,
                  'SELECT next_fire_at, NULL::timestamptz FROM s2', 'a schedule not due is untouched');
SELECT ok((SELECT updated_at >= (SELECT at FROM t0) AND updated_at <= (SELECT at FROM t1) FROM after1), 'updated_at is the time of the call');

CREATE TEMP TABLE e2 AS SELECT * FROM taskforge.tf_enqueue_periodic();
SELECT results_eq('SELECT enqueued, names, task_ids FROM e2', $$VALUES (0, '{}'::text[], '{}'::bigint[])$$, 'a second call finds nothing due');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_enq'), 1, 'and creates nothing');
SELECT is((SELECT next_fire_at FROM e2), (SELECT next_fire_at FROM e), 'it still reports the next tick');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
