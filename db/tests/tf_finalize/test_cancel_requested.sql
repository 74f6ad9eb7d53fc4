-- tf_finalize after tf_cancel of a running task: a success stays SUCCEEDED, any failure ends CANCELLED (never RETRYING), the attempt keeps what happened.
BEGIN;
SELECT plan(15);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_cancel_req') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT 'failed', task_id FROM taskforge.tf_submit('noop', '{"l": "failed"}', 'q_finalize_cancel_req', max_attempts => 3);
INSERT INTO o SELECT 'retryable', task_id FROM taskforge.tf_submit('noop', '{"l": "retryable"}', 'q_finalize_cancel_req', max_attempts => 3);
INSERT INTO o SELECT 'succeeded', task_id FROM taskforge.tf_submit('noop', '{"l": "succeeded"}', 'q_finalize_cancel_req', max_attempts => 3);
INSERT INTO o SELECT 'cancelled', task_id FROM taskforge.tf_submit('noop', '{"l": "cancelled"}', 'q_finalize_cancel_req', max_attempts => 3);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_cancel_req'], max_tasks => 10);
SELECT is((SELECT count(*)::int FROM c), 4, 'four tasks are running');
CREATE TEMP TABLE x AS SELECT k.* FROM o, taskforge.tf_cancel(o.task_id, 'stop it') k;
SELECT is((SELECT array_agg(DISTINCT task_state) FROM x), ARRAY['RUNNING'], 'cancelling running tasks leaves them RUNNING');

CREATE TEMP TABLE f AS
    SELECT o.label, r.* FROM o, taskforge.tf_finalize(o.task_id, (SELECT id FROM w), 1, o.label,
                                                      CASE WHEN o.label = 'succeeded' THEN '{"ok": 1}'::jsonb END,
                                                      CASE WHEN o.label <> 'succeeded' THEN '{"message": "failed"}'::jsonb END) r;
SELECT is((SELECT count(*)::int FROM f WHERE accepted), 4, 'every finalize is accepted');
SELECT is((SELECT task_state FROM f WHERE label = 'failed'), 'CANCELLED', 'cancel requested + failed ends CANCELLED');
SELECT is((SELECT task_state FROM f WHERE label = 'retryable'), 'CANCELLED', 'cancel requested + retryable with budget ends CANCELLED, not RETRYING');
SELECT is((SELECT task_state FROM f WHERE label = 'succeeded'), 'SUCCEEDED', 'cancel requested + succeeded stays SUCCEEDED');
SELECT is((SELECT task_state FROM f WHERE label = 'cancelled'), 'CANCELLED', 'cancel requested + cancelled ends CANCELLED');

SELECT is((SELECT array_agg(o.label || '=' || t.state ORDER BY o.label) FROM o JOIN taskforge.tasks t USING (task_id)),
    ARRAY['cancelled=CANCELLED', 'failed=CANCELLED', 'retryable=CANCELLED', 'succeeded=SUCCEEDED'], 'the stored task states match');
SELECT is((SELECT array_agg(o.label || '=' || a.state || '/' || a.outcome ORDER BY o.label) FROM o JOIN taskforge.attempts a USING (task_id)),
    ARRAY['cancelled=CANCELLED/cancelled', 'failed=FAILED/failed', 'retryable=FAILED/retryable', 'succeeded=SUCCEEDED/succeeded'],
    'each attempt records what the worker reported');
SELECT is((SELECT count(*)::int FROM o JOIN taskforge.tasks t USING (task_id) WHERE t.finished_at IS NULL), 0, 'all four tasks are finished');
SELECT is((SELECT result FROM o JOIN taskforge.tasks USING (task_id) WHERE o.label = 'succeeded'), '{"ok": 1}'::jsonb,
    'the succeeded task keeps its result');
SELECT is((SELECT last_error FROM o JOIN taskforge.tasks USING (task_id) WHERE o.label = 'retryable'), '{"message": "failed"}'::jsonb,
    'the cancelled task keeps the error');
SELECT is((SELECT count(*)::int FROM o JOIN taskforge.tasks t USING (task_id) WHERE t.cancel_reason = 'stop it'), 4,
    'the cancel reason is kept on every task');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_cancel_req'], max_tasks => 10)), 0,
    'none of them is claimable again');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
