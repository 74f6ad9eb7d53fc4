-- A tick handled twice (its next_fire_at set back by hand) cannot create a second task: the idempotency key replays to the first. A key taken by a different request counts as the tick's task (a WARNING) and the schedule moves on.
BEGIN;
SELECT plan(9);
SET LOCAL TimeZone = 'UTC';
DELETE FROM taskforge.periodic_schedules;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_schedule_periodic('replay', '0 * * * *', 'noop', queue => 'q_replay');
UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('hour', clock_timestamp()) WHERE name = 'replay';
CREATE TEMP TABLE e1 AS SELECT * FROM taskforge.tf_enqueue_periodic();
-- Set the same tick due again, as a restore of an old backup or a DBA might.
UPDATE taskforge.periodic_schedules SET next_fire_at = (SELECT ticks[1] FROM e1), last_fire_at = NULL, last_task_id = NULL WHERE name = 'replay';
-- (only this schedule is due for the calls below)
CREATE TEMP TABLE e2 AS SELECT * FROM taskforge.tf_enqueue_periodic();

SELECT is((SELECT enqueued FROM e1), 1, 'setup: the tick was enqueued');
SELECT is((SELECT ticks FROM e2), (SELECT ticks FROM e1), 'the same tick is handled again');
SELECT is((SELECT task_ids FROM e2), (SELECT task_ids FROM e1), 'it resolves to the first task');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_replay'), 1, 'no second task exists');
SELECT is((SELECT last_task_id FROM taskforge.periodic_schedules WHERE name = 'replay'), (SELECT task_ids[1] FROM e1), 'the schedule records that task');

-- Someone submitted a task by hand with the key of another schedule's due tick, and another request.
CREATE TEMP TABLE h AS SELECT date_trunc('hour', clock_timestamp()) AS tick;
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_schedule_periodic('squatted', '0 * * * *', 'noop', queue => 'q_replay');
UPDATE taskforge.periodic_schedules SET next_fire_at = (SELECT tick FROM h) WHERE name = 'squatted';
CREATE TEMP TABLE squatter AS
SELECT * FROM taskforge.tf_submit('echo', '{"by": "hand"}', 'q_replay_other',
    idempotency_key => (SELECT 'periodic:squatted:' || to_char(tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM h));
CREATE TEMP TABLE e3 AS SELECT * FROM taskforge.tf_enqueue_periodic();
SELECT is((SELECT task_ids FROM e3), ARRAY[(SELECT task_id FROM squatter)], 'a key held by a different request: that task is reported');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_replay'), 1, 'and no task is created for the tick');
SELECT ok((SELECT next_fire_at > clock_timestamp() AND last_task_id = (SELECT task_id FROM squatter)
             FROM taskforge.periodic_schedules WHERE name = 'squatted'), 'the schedule records that task and moves on');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
