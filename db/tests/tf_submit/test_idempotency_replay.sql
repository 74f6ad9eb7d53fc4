-- tf_submit with a used idempotency key and the same request returns the stored task (created=false) in any state, never creating or resetting work.
BEGIN;
SELECT plan(25);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_submit_idem_replay') AS id;
CREATE TEMP TABLE first AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1, "b": [1, 2], "c": {"x": 1, "y": "z"}}', 'q_submit_idem_replay',
                                      5, 4, NULL, 'k_submit_idem_replay');
CREATE TEMP TABLE replay_queued AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1, "b": [1, 2], "c": {"x": 1, "y": "z"}}', 'q_submit_idem_replay',
                                      5, 4, NULL, 'k_submit_idem_replay');

SELECT is((SELECT created FROM first), true, 'the first submit with a key creates the task');
SELECT is((SELECT task_id FROM replay_queued), (SELECT task_id FROM first), 'a replay returns the same task_id');
SELECT is((SELECT created FROM replay_queued), false, 'a replay reports created = false');
SELECT is((SELECT state FROM replay_queued), 'QUEUED', 'a replay reports the current state QUEUED');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE idempotency_key = 'k_submit_idem_replay'), 1,
    'one task holds the key');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_idem_replay'), 1, 'the replay created no task');
SELECT is((SELECT length(fingerprint) FROM taskforge.tasks JOIN first USING (task_id)), 32, 'a 32-byte SHA-256 fingerprint is stored');

-- Key order and white space of the payload are irrelevant; named and positional calls are the same request.
SELECT is((SELECT task_id FROM taskforge.tf_submit('echo', '{ "c": {"y": "z", "x": 1}, "b": [1,2],   "a": 1 }', 'q_submit_idem_replay',
                                                   5, 4, NULL, 'k_submit_idem_replay')),
    (SELECT task_id FROM first), 'the same payload with other key order and spacing is a replay');
SELECT is((SELECT created FROM taskforge.tf_submit(idempotency_key => 'k_submit_idem_replay', max_attempts => 4, priority => 5,
                                                   queue => 'q_submit_idem_replay', task_type => 'echo',
                                                   payload => '{"c": {"x": 1, "y": "z"}, "a": 1, "b": [1, 2]}')),
    false, 'named arguments in another order are the same request');

-- Omitted defaults and the same values given explicitly give the same fingerprint.
CREATE TEMP TABLE dflt AS SELECT * FROM taskforge.tf_submit('noop', queue => 'q_submit_idem_replay', idempotency_key => 'k_submit_idem_replay_dflt');
SELECT is((SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_replay', 0, 3, NULL, 'k_submit_idem_replay_dflt')),
    (SELECT task_id FROM dflt), 'explicit default values replay a submit that omitted them');

-- A replay while the task runs returns RUNNING and changes nothing.
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_submit_idem_replay'], 60, 10);
SELECT is((SELECT count(*)::int FROM c), 2, 'both keyed tasks were claimed');
CREATE TEMP TABLE running_before AS SELECT t.* FROM taskforge.tasks t JOIN first USING (task_id);
CREATE TEMP TABLE replay_running AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1, "b": [1, 2], "c": {"x": 1, "y": "z"}}', 'q_submit_idem_replay',
                                      5, 4, NULL, 'k_submit_idem_replay');
SELECT is((SELECT task_id FROM replay_running), (SELECT task_id FROM first), 'a replay of a running task returns its id');
SELECT is((SELECT state FROM replay_running), 'RUNNING', 'a replay of a running task reports RUNNING');
SELECT is((SELECT created FROM replay_running), false, 'a replay of a running task reports created = false');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN first USING (task_id)), (SELECT r::text FROM running_before r),
    'the replay did not touch the running task (state, owner, lease, attempt_count, updated_at)');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN first USING (task_id)), 1, 'the running task still has one attempt');
SELECT is((SELECT a.state FROM taskforge.attempts a JOIN first USING (task_id)), 'RUNNING', 'its attempt is still RUNNING');

-- After success a replay still returns the stored task and does not queue it again.
CREATE TEMP TABLE fin AS
    SELECT f.* FROM c, taskforge.tf_finalize(c.task_id, (SELECT id FROM w), c.attempt_number, 'succeeded', '{"done": true}') f
     WHERE c.task_id = (SELECT task_id FROM first);
SELECT is((SELECT task_state FROM fin), 'SUCCEEDED', 'the task succeeded');
CREATE TEMP TABLE replay_done AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1, "b": [1, 2], "c": {"x": 1, "y": "z"}}', 'q_submit_idem_replay',
                                      5, 4, NULL, 'k_submit_idem_replay');
SELECT is((SELECT task_id FROM replay_done), (SELECT task_id FROM first), 'a replay of a succeeded task returns its id');
SELECT is((SELECT state FROM replay_done), 'SUCCEEDED', 'a replay of a succeeded task reports SUCCEEDED');
SELECT is((SELECT created FROM replay_done), false, 'a replay of a succeeded task reports created = false');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN first USING (task_id)), 'SUCCEEDED', 'the task stays SUCCEEDED');
SELECT is((SELECT result FROM taskforge.tasks JOIN first USING (task_id)), '{"done": true}'::jsonb, 'its result is kept');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_idem_replay'), 2,
    'no replay created a task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
