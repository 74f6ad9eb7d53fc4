-- tf_prune_workers: older_than_seconds outside 0..3153600000 (or NULL, NaN, infinite) and max_rows outside 1..100000 (or not whole) are TF400 naming the argument, and nothing is deleted.
BEGIN;
SELECT plan(14);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('prune-workers-validation') AS id;
DO $$ BEGIN PERFORM taskforge.tf_deregister_worker(id) FROM w; END $$;
CREATE TEMP TABLE s AS SELECT gen_random_uuid() AS id;
CREATE TEMP TABLE beats AS SELECT taskforge.tf_scheduler_heartbeat(id, 'prune-workers-validation', stopping => true) AS at FROM s;
-- Simulate time: both stopped a day ago, so any valid call with a shorter retention would delete them.
UPDATE taskforge.workers SET started_at = started_at - interval '1 day', last_heartbeat_at = last_heartbeat_at - interval '1 day',
                             stopped_at = stopped_at - interval '1 day' WHERE worker_id = (SELECT id FROM w);
UPDATE taskforge.schedulers SET started_at = started_at - interval '1 day', last_heartbeat_at = last_heartbeat_at - interval '1 day',
                                stopped_at = stopped_at - interval '1 day' WHERE scheduler_id = (SELECT id FROM s);

SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(NULL)', 'TF400', 'older_than_seconds: must not be NULL',
                 'NULL older_than_seconds is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(-1)', 'TF400',
                 'older_than_seconds: must be at least 0 and at most 3153600000 seconds, got -1', 'negative older_than_seconds is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(3153600001)', 'TF400', NULL, 'older_than_seconds above 100 years is TF400');
SELECT throws_ok($$SELECT * FROM taskforge.tf_prune_workers('NaN')$$, 'TF400', 'older_than_seconds: must be a finite number of seconds, got NaN',
                 'NaN older_than_seconds is TF400');
SELECT throws_ok($$SELECT * FROM taskforge.tf_prune_workers('-Infinity')$$, 'TF400', NULL, 'infinite older_than_seconds is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 0)', 'TF400', 'max_rows: must be between 1 and 100000, got 0',
                 'max_rows 0 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 100001)', 'TF400',
                 'max_rows: must be between 1 and 100000, got 100001', 'max_rows above 100000 is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => NULL)', 'TF400', 'max_rows: must be between 1 and 100000, got NULL',
                 'NULL max_rows is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 2.5)', 'TF400',
                 'max_rows: must be a whole number between 1 and 100000, got 2.5', 'a fractional max_rows is TF400');
SELECT throws_ok('SELECT * FROM taskforge.tf_prune_workers(60, max_rows => 99999999999999999999)', 'TF400',
                 'max_rows: must be between 1 and 100000, got 99999999999999999999', 'a max_rows beyond bigint is TF400');
SELECT isnt_empty('SELECT * FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)', 'the rejected calls deleted no worker');
SELECT isnt_empty('SELECT * FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM s)', 'the rejected calls deleted no scheduler');
SELECT results_eq('SELECT * FROM taskforge.tf_prune_workers(3153600000, max_rows => 100000)', $$VALUES (0, 0)$$,
                  'the upper bounds are accepted (and a retention of 100 years deletes nothing here)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
