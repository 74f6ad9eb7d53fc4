-- tf_submit's appended notify_finished: stored on the task (default false, NULL is TF400), outside the fingerprint (a replay that differs only in it is the stored task, whose flag stands), and the trigger function that sends the finished notification is called for flagged tasks only: an unflagged task's transitions never call it (its WHEN clause is false). Delivery at commit, per terminal path: tests/sql/test_notify_finished.py.
BEGIN;
SELECT plan(13);
SET LOCAL track_functions = 'pl';
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_submit_notify', queues => ARRAY['q_notify_plain', 'q_notify_flagged']) AS id;

CREATE TEMP TABLE plain AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_notify_plain');
CREATE TEMP TABLE flagged AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_notify_flagged', notify_finished => true);
SELECT is((SELECT notify_finished FROM taskforge.tasks JOIN plain USING (task_id)), false, 'the default is false');
SELECT is((SELECT notify_finished FROM taskforge.tasks JOIN flagged USING (task_id)), true, 'notify_finished => true is stored');
SELECT is((SELECT notify_finished FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM flagged)), true, 'and shown by tf_tasks');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', notify_finished => NULL)$$, 'TF400',
    'notify_finished: must be true or false, got NULL', 'NULL is TF400');

-- Not part of the fingerprint: the first submit's value stands.
CREATE TEMP TABLE k AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_notify_key', idempotency_key => 'notify-k1');
SELECT results_eq($$SELECT task_id, created FROM taskforge.tf_submit('noop', '{}', 'q_notify_key', idempotency_key => 'notify-k1', notify_finished => true)$$,
    $$SELECT task_id, false FROM k$$, 'a replay asking for the notification is the stored task, not TF409');
SELECT is((SELECT notify_finished FROM taskforge.tasks JOIN k USING (task_id)), false, 'whose flag is unchanged');
SELECT is((SELECT created FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_notify_key", "idempotency_key": "notify-k1", "notify_finished": true}]')),
    false, 'tf_submit_many: the same');
CREATE TEMP TABLE m AS SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_notify_many", "notify_finished": true},
    {"task_type": "noop", "queue": "q_notify_many", "notify_finished": false}, {"task_type": "noop", "queue": "q_notify_many"}]');
SELECT is((SELECT array_agg(t.notify_finished ORDER BY m.task_id) FROM m JOIN taskforge.tasks t USING (task_id)), ARRAY[true, false, false],
    'tf_submit_many stores the flag; omitted is false');

-- Who calls the trigger function (pg_stat_xact_user_functions: this transaction's calls).
CREATE FUNCTION pg_temp.trigger_calls() RETURNS bigint LANGUAGE sql AS $helper$
    SELECT coalesce((SELECT calls FROM pg_catalog.pg_stat_xact_user_functions
                      WHERE schemaname = 'taskforge' AND funcname = '_tf_notify_finished'), 0)
$helper$;
CREATE TEMP TABLE c_plain AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_notify_plain']);
CREATE TEMP TABLE f_plain AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM c_plain), (SELECT id FROM w), 1, 'succeeded');
CREATE TEMP TABLE plain2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_notify_plain');
CREATE TEMP TABLE x_plain AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM plain2));
SELECT is(pg_temp.trigger_calls(), 0::bigint, 'an unflagged task''s claim, finalize and cancel never call the trigger function');
SELECT is((SELECT t.state::text FROM taskforge.tasks t JOIN plain USING (task_id)), 'SUCCEEDED', 'the unflagged task did end');
CREATE TEMP TABLE c_flagged AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_notify_flagged']);
SELECT is(pg_temp.trigger_calls(), 1::bigint, 'a flagged task''s claim calls it (and sends nothing: not terminal)');
CREATE TEMP TABLE f_flagged AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM c_flagged), (SELECT id FROM w), 1, 'succeeded');
SELECT is(pg_temp.trigger_calls(), 2::bigint, 'and so does its finalize');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
