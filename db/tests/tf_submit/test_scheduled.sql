-- tf_submit stores an explicit scheduled_at as the same instant; a future task is not claimable until then, a past one at once.
BEGIN;
SELECT plan(11);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_submit_scheduled') AS id;
CREATE TEMP TABLE future AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_scheduled', scheduled_at => clock_timestamp() + interval '1 hour');
CREATE TEMP TABLE past AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_scheduled_past', scheduled_at => '2001-02-03 04:05:06.789+00');
CREATE TEMP TABLE zoned AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_scheduled_zoned', scheduled_at => '2030-01-01 12:00:00+05');

SELECT is((SELECT state FROM future), 'QUEUED', 'a future task is QUEUED');
SELECT ok((SELECT scheduled_at > created_at + interval '59 minutes' AND scheduled_at < created_at + interval '61 minutes'
             FROM taskforge.tasks JOIN future USING (task_id)), 'the future scheduled_at is stored');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN past USING (task_id)), '2001-02-03 04:05:06.789+00'::timestamptz,
    'a past scheduled_at is stored as given');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN zoned USING (task_id)), '2030-01-01 07:00:00+00'::timestamptz,
    'a scheduled_at with an offset is stored as the same instant');

SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_submit_scheduled'], max_tasks => 10)), 0,
    'a task scheduled an hour ahead is not claimed');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN future USING (task_id)), 'QUEUED', 'it stays QUEUED');
SELECT is((SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_submit_scheduled_past'])), (SELECT task_id FROM past),
    'a task scheduled in the past is claimed at once');

-- Time passes: the hour is over.
UPDATE taskforge.tasks t SET scheduled_at = clock_timestamp() - interval '1 second' FROM future f WHERE t.task_id = f.task_id;
SELECT is((SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_submit_scheduled'])), (SELECT task_id FROM future),
    'once its time has come the task is claimed');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN future USING (task_id)), 'RUNNING', 'the claimed task is RUNNING');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_submit_scheduled_zoned'])), 0,
    'a task scheduled in 2030 is not claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
