-- tf_finalize_many after tf_cancel was requested while the tasks ran: in one batch, succeeded stays SUCCEEDED (the work happened) and every other outcome ends CANCELLED, never RETRYING or FAILED.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_cancel_req') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT l, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('l', l), 'q_fmany_cancel_req',
                                                                  max_attempts => CASE WHEN l = 'retryable_last' THEN 1 ELSE 3 END))
  FROM unnest(ARRAY['succeeded', 'failed', 'retryable', 'retryable_last', 'cancelled']) l;
-- An untouched task in the same batch: no cancel request, retryable with budget -> RETRYING.
INSERT INTO o SELECT 'control', task_id FROM taskforge.tf_submit('noop', '{}', 'q_fmany_cancel_req', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_cancel_req'], 60, max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c), 6, 'six tasks are running');
CREATE TEMP TABLE x AS SELECT k.* FROM o, taskforge.tf_cancel(o.task_id, 'stop it') k WHERE o.label <> 'control';
SELECT is((SELECT array_agg(DISTINCT task_state) FROM x), ARRAY['RUNNING'], 'cancelling running tasks leaves them RUNNING');

CREATE TEMP TABLE f AS
SELECT r.* FROM taskforge.tf_finalize_many((SELECT id FROM w),
    (SELECT array_agg(task_id ORDER BY label) FROM o),
    ARRAY[1, 1, 1, 1, 1, 1],
    (SELECT array_agg(CASE WHEN label IN ('retryable_last', 'control') THEN 'retryable' ELSE label END ORDER BY label) FROM o),
    (SELECT array_agg(CASE WHEN label = 'succeeded' THEN '{"ok": 1}'::jsonb END ORDER BY label) FROM o),
    (SELECT array_agg(CASE WHEN label <> 'succeeded' THEN '{"message": "failed"}'::jsonb END ORDER BY label) FROM o)) r;

SELECT is((SELECT count(*)::int FROM f WHERE accepted), 6, 'every element is accepted');
SELECT results_eq($$SELECT o.label, f.task_state FROM f JOIN o USING (task_id) ORDER BY o.label$$,
                  $$VALUES ('cancelled', 'CANCELLED'), ('control', 'RETRYING'), ('failed', 'CANCELLED'), ('retryable', 'CANCELLED'),
                           ('retryable_last', 'CANCELLED'), ('succeeded', 'SUCCEEDED')$$,
                  'with a cancel request: succeeded stays SUCCEEDED, failed/retryable (with or without budget)/cancelled end CANCELLED; the task without request is RETRYING');
SELECT results_eq($$SELECT o.label, t.state::text FROM o JOIN taskforge.tasks t USING (task_id) ORDER BY o.label$$,
                  $$SELECT o.label, f.task_state FROM f JOIN o USING (task_id) ORDER BY o.label$$,
                  'the stored task states match the returned ones');
SELECT results_eq($$SELECT o.label, a.state::text || '/' || a.outcome::text FROM o JOIN taskforge.attempts a USING (task_id) ORDER BY o.label$$,
                  $$VALUES ('cancelled', 'CANCELLED/cancelled'), ('control', 'FAILED/retryable'), ('failed', 'FAILED/failed'),
                           ('retryable', 'FAILED/retryable'), ('retryable_last', 'FAILED/retryable'), ('succeeded', 'SUCCEEDED/succeeded')$$,
                  'each attempt records what the worker reported');
SELECT is((SELECT count(*)::int FROM o JOIN taskforge.tasks t USING (task_id) WHERE t.finished_at IS NULL), 1,
    'every task but the RETRYING one is finished');
SELECT is((SELECT result FROM o JOIN taskforge.tasks USING (task_id) WHERE o.label = 'succeeded'), '{"ok": 1}'::jsonb,
    'the succeeded task keeps its result');
SELECT is((SELECT count(*)::int FROM o JOIN taskforge.tasks t USING (task_id) WHERE t.cancel_reason = 'stop it'), 5,
    'the cancel reason is kept');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
