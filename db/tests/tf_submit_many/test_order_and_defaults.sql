-- tf_submit_many returns one row per request in input order, creates each task as tf_submit would, and gives omitted keys tf_submit's defaults.
BEGIN;
SELECT plan(14);

CREATE TEMP TABLE s AS
    SELECT row_number() OVER () AS n, r.*
      FROM taskforge.tf_submit_many($$[
          {"task_type": "echo", "payload": {"n": 1}, "queue": "q_many_order_b", "priority": 7, "max_attempts": 5},
          {"task_type": "noop", "queue": "q_many_order_a"},
          {"task_type": "echo", "payload": {"n": 3, "nested": {"list": [1, "two", null]}}, "queue": "q_many_order_b"},
          {"task_type": "noop", "queue": "q_many_order_a", "priority": -3}
      ]$$) r;
CREATE TEMP TABLE task AS SELECT s.n, t.* FROM s JOIN taskforge.tasks t USING (task_id);
CREATE TEMP TABLE dflt_s AS SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}]');
CREATE TEMP TABLE dflt AS SELECT t.* FROM dflt_s JOIN taskforge.tasks t USING (task_id);

SELECT is((SELECT count(*)::int FROM s), 4, 'one row per request');
SELECT ok((SELECT bool_and(created AND state = 'QUEUED') FROM s), 'every row reports created and QUEUED');
SELECT is((SELECT array_agg(payload ->> 'n' ORDER BY n) FROM task), ARRAY['1', NULL, '3', NULL], 'rows come back in input order');
SELECT is((SELECT array_agg(task_id ORDER BY n) FROM s), (SELECT array_agg(task_id ORDER BY task_id) FROM s),
    'task ids are assigned in input order');
SELECT is((SELECT count(DISTINCT task_id)::int FROM s), 4, 'every request without a key is its own task');
SELECT is((SELECT (task_type, queue, priority, max_attempts)::text FROM task WHERE n = 1), '(echo,q_many_order_b,7,5)',
    'given values are stored');
SELECT is((SELECT payload::jsonb FROM task WHERE n = 3), '{"n": 3, "nested": {"list": [1, "two", null]}}'::jsonb, 'the payload is stored unchanged');
SELECT is((SELECT (payload, priority, max_attempts)::text FROM task WHERE n = 2), '({},0,3)',
    'omitted payload, priority and max_attempts take tf_submit''s defaults');
SELECT is((SELECT queue::text FROM dflt), 'default', 'an omitted queue is ''default''');
SELECT ok((SELECT bool_and(scheduled_at = created_at AND updated_at = created_at) FROM task), 'no schedule means due at creation');
SELECT is((SELECT count(DISTINCT created_at)::int FROM task), 1, 'one clock reading for the whole call');
SELECT ok((SELECT bool_and(idempotency_key IS NULL AND fingerprint IS NULL AND attempt_count = 0) FROM task),
    'no key, no fingerprint, no attempts');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN s USING (task_id)), 0, 'no attempt row exists before a claim');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
