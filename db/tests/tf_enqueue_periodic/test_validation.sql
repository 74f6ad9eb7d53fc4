-- tf_enqueue_periodic: max_tasks outside 1..100000 (or NULL) is TF400 naming the argument, and a rejected call enqueues nothing.
BEGIN;
SELECT plan(6);
DELETE FROM taskforge.periodic_schedules;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_schedule_periodic('enq-validation', '* * * * *', 'noop', queue => 'q_enq_validation');
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('minute', clock_timestamp());
SELECT throws_ok('SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 0)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 0', 'max_tasks 0 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 100001)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got 100001', 'max_tasks above 100000 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => NULL)', 'TF400',
                 'max_tasks: must be between 1 and 100000, got NULL', 'NULL max_tasks is TF400');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_enq_validation'), 0, 'the rejected calls enqueued nothing');
SELECT results_eq('SELECT enqueued FROM taskforge.tf_enqueue_periodic(max_tasks => 100000)', ARRAY[1], 'max_tasks 100000 is accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
