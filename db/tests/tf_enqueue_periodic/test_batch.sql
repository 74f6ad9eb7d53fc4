-- max_tasks bounds a call: the earliest due schedules go first, the call reports a next_fire_at already past while some are left, and the next call takes the rest; without schedules next_fire_at is NULL.
BEGIN;
SELECT plan(7);
SET LOCAL TimeZone = 'UTC';
DELETE FROM taskforge.periodic_schedules;
SELECT results_eq('SELECT enqueued, next_fire_at FROM taskforge.tf_enqueue_periodic()', $$VALUES (0, NULL::timestamptz)$$,
                  'no schedules: nothing enqueued and no next tick');
CREATE TEMP TABLE s AS
SELECT n, (SELECT next_fire_at FROM taskforge.tf_schedule_periodic('batch-' || n, '0 * * * *', 'noop', jsonb_build_object('n', n), 'q_batch')) AS first_tick
  FROM generate_series(1, 5) n;
-- Schedule n became due n hours ago, so batch-5 is the earliest.
UPDATE taskforge.periodic_schedules p SET next_fire_at = date_trunc('hour', clock_timestamp()) - make_interval(hours => s.n - 1)
  FROM s WHERE p.name = 'batch-' || s.n;
CREATE TEMP TABLE e1 AS SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 2);
SELECT is((SELECT enqueued FROM e1), 2, 'max_tasks => 2 handles two schedules');
SELECT is((SELECT names FROM e1), ARRAY['batch-5', 'batch-4'], 'the earliest due first');
SELECT ok((SELECT next_fire_at < clock_timestamp() FROM e1), 'next_fire_at is already past: call again');
CREATE TEMP TABLE e2 AS SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 10);
SELECT is((SELECT names FROM e2), ARRAY['batch-3', 'batch-2', 'batch-1'], 'the next call takes the rest');
SELECT is((SELECT count(DISTINCT payload)::int FROM taskforge.tasks WHERE queue = 'q_batch'), 5, 'one task per schedule');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
