-- tf_finalize_many 'cancelled' (the handler stopped on request or by itself): attempt and task CANCELLED, finished, the error kept, never retried.
BEGIN;
SELECT plan(7);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_cancelled') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_cancelled', max_attempts => 3)) AS task_id
  FROM generate_series(1, 2) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_cancelled'], 60, max_tasks => 10);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize_many(
    (SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k), ARRAY[1, 1], ARRAY['cancelled', 'cancelled'],
    errors => ARRAY['{"message": "stopped"}'::jsonb, NULL]);

SELECT is((SELECT array_agg(accepted::text || '/' || task_state ORDER BY task_id) FROM f),
    ARRAY['true/CANCELLED', 'true/CANCELLED'], 'cancelled elements are accepted; the tasks are CANCELLED');
SELECT is((SELECT array_agg(DISTINCT a.state || '/' || a.outcome) FROM k JOIN taskforge.attempts a USING (task_id)),
    ARRAY['CANCELLED/cancelled'], 'the attempts are CANCELLED with outcome cancelled');
SELECT is((SELECT array_agg(DISTINCT t.state::text) FROM k JOIN taskforge.tasks t USING (task_id)), ARRAY['CANCELLED'], 'the stored tasks are CANCELLED');
SELECT is((SELECT t.last_error FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.n = 1), '{"message": "stopped"}'::jsonb,
    'the error given is kept');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.finished_at IS NOT NULL AND t.owner_worker_id IS NULL), 2,
    'the tasks are finished and have no owner');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_cancelled'], max_tasks => 10)), 0,
    'CANCELLED tasks are not claimed, although attempts remain');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
