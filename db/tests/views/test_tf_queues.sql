-- tf_queues lists queues with live work or a control row, with paused, max_running, queued/due/running/retrying counts and the oldest due task.
BEGIN;
SELECT plan(4);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_view_queues') AS id;
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_view_queues') UNION ALL
                       SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_view_queues') UNION ALL
                       SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_view_queues', scheduled_at => now() + interval '1 hour');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_view_queues']);
-- The view reads now(), the start of this test's transaction: move the due task before it.
UPDATE taskforge.tasks SET scheduled_at = now() - interval '1 minute'
 WHERE queue = 'q_view_queues' AND state = 'QUEUED' AND scheduled_at < now() + interval '1 minute';
DO $$ BEGIN PERFORM taskforge.tf_set_queue_limit('q_view_limited', 4); END $$;
DO $$ BEGIN PERFORM taskforge.tf_pause_queue('q_view_queues'); END $$;
SELECT results_eq($$SELECT queue, paused, max_running, queued, due, running, retrying FROM taskforge.tf_queues
                     WHERE queue LIKE 'q\_view\_%' ORDER BY queue$$,
                  $$VALUES ('q_view_limited'::text, false, 4, 0::bigint, 0::bigint, 0::bigint, 0::bigint),
                           ('q_view_queues', true, NULL, 2, 1, 1, 0)$$,
                  'one row per queue with controls and live counts');
SELECT is((SELECT oldest_due_at FROM taskforge.tf_queues WHERE queue = 'q_view_queues'),
          (SELECT scheduled_at FROM taskforge.tasks WHERE state = 'QUEUED' AND queue = 'q_view_queues' AND scheduled_at <= now()),
          'oldest_due_at is the due time of the oldest due task');
SELECT ok((SELECT oldest_due_age_seconds >= 0 FROM taskforge.tf_queues WHERE queue = 'q_view_queues'), 'its age is not negative');
SELECT is((SELECT oldest_due_at FROM taskforge.tf_queues WHERE queue = 'q_view_limited'), NULL::timestamptz,
          'a queue without due work has no oldest due task');
SELECT * FROM finish();
ROLLBACK;
