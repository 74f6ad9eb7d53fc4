-- tf_submit_many applies tf_submit's idempotency per element: a stored key with the same request replays (created=false, any state), a repeat of an earlier element's key in the same call resolves to that task, and tf_submit and tf_submit_many share one fingerprint.
BEGIN;
SELECT plan(12);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_many_idem') AS id;
CREATE TEMP TABLE one AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_many_idem', 5, 4, '2030-01-01 12:00:00+05', 'k_many_idem_1');
CREATE TEMP TABLE running AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_many_idem_run', idempotency_key => 'k_many_idem_run');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_many_idem_run']);

CREATE TEMP TABLE s AS
    SELECT row_number() OVER () AS n, r.*
      FROM taskforge.tf_submit_many($$[
          {"task_type": "echo", "payload": {"a": 1}, "queue": "q_many_idem", "priority": 5, "max_attempts": 4,
           "scheduled_at": "2030-01-01T07:00:00Z", "idempotency_key": "k_many_idem_1"},
          {"task_type": "noop", "queue": "q_many_idem", "idempotency_key": "k_many_idem_2"},
          {"task_type": "noop", "queue": "q_many_idem_run", "idempotency_key": "k_many_idem_run"},
          {"queue": "q_many_idem", "idempotency_key": "k_many_idem_2", "task_type": "noop", "payload": {}, "priority": 0},
          {"task_type": "noop", "queue": "q_many_idem"}
      ]$$) r;

SELECT is((SELECT task_id FROM s WHERE n = 1), (SELECT task_id FROM one), 'a key stored by tf_submit with the same request replays its task');
SELECT is((SELECT created FROM s WHERE n = 1), false, 'the replay reports created = false');
SELECT is((SELECT state FROM s WHERE n = 1), 'QUEUED', 'the replay reports the current state');
SELECT is((SELECT created FROM s WHERE n = 2), true, 'a new key creates a task');
SELECT is((SELECT (task_id, state, created)::text FROM s WHERE n = 3), (SELECT (task_id, 'RUNNING', false)::text FROM running),
    'a replay of a running task returns it as RUNNING without touching it');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN running USING (task_id)), 'RUNNING', 'the running task is still RUNNING');
SELECT is((SELECT task_id FROM s WHERE n = 4), (SELECT task_id FROM s WHERE n = 2),
    'an element repeating an earlier element''s key (same request, other key order, explicit defaults) resolves to that task');
SELECT is((SELECT created FROM s WHERE n = 4), false, 'the repeat reports created = false');
SELECT is((SELECT created FROM s WHERE n = 5), true, 'a request without a key after them is created');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_many_idem'), 3, 'three tasks in the queue: the replayed one, k_many_idem_2, the keyless one');

-- The other way round: a key stored by tf_submit_many replays through tf_submit.
SELECT is((SELECT (task_id, created)::text FROM taskforge.tf_submit('noop', '{}', 'q_many_idem', 0, 3, NULL, 'k_many_idem_2')),
    (SELECT (task_id, false)::text FROM s WHERE n = 2), 'tf_submit replays a key that tf_submit_many stored');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
