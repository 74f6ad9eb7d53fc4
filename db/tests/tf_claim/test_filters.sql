-- tf_claim takes only tasks of the given queues and task types; NULL means any, an empty array means none.
BEGIN;
SELECT plan(11);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('claimfilter.x')$$, 'register task type claimfilter.x');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('claimfilter.y')$$, 'register task type claimfilter.y');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_filters') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT 'A_noop', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_filter_a');
INSERT INTO o SELECT 'B_noop', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_filter_b');
INSERT INTO o SELECT 'A_x', task_id FROM taskforge.tf_submit('claimfilter.x', '{}', 'q_claim_filter_a');
INSERT INTO o SELECT 'B_x', task_id FROM taskforge.tf_submit('claimfilter.x', '{}', 'q_claim_filter_b');
INSERT INTO o SELECT 'C_y', task_id FROM taskforge.tf_submit('claimfilter.y', '{}', 'q_claim_filter_c');

CREATE TEMP TABLE none_queue AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_filter_nowhere'], max_tasks => 10);
SELECT is((SELECT count(*)::int FROM none_queue), 0, 'a queue without tasks gives zero rows');
CREATE TEMP TABLE empty_arr AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY[]::text[], max_tasks => 10,
                                                                 task_types => ARRAY['claimfilter.y']);
SELECT is((SELECT count(*)::int FROM empty_arr), 0, 'an empty queues array matches no queue');

CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_filter_b'], max_tasks => 10,
                                                         task_types => ARRAY['noop']);
SELECT is((SELECT array_agg(o.label ORDER BY o.label) FROM c1 JOIN o USING (task_id)), ARRAY['B_noop'],
    'queue b and type noop: only that task');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_filter_a', 'q_claim_filter_b'],
                                                         max_tasks => 10, task_types => ARRAY['claimfilter.x']);
SELECT is((SELECT array_agg(o.label ORDER BY o.label) FROM c2 JOIN o USING (task_id)), ARRAY['A_x', 'B_x'],
    'two queues and one type: the tasks of that type in both queues');
SELECT is((SELECT array_agg(DISTINCT c2.task_type) FROM c2), ARRAY['claimfilter.x'], 'the returned task_type column is the filtered type');
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 10,
                                                         task_types => ARRAY['claimfilter.y']);
SELECT is((SELECT array_agg(o.label ORDER BY o.label) FROM c3 JOIN o USING (task_id)), ARRAY['C_y'],
    'queues NULL means any queue (filtered by a type used only here)');
CREATE TEMP TABLE c4 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_filter_a'], max_tasks => 10);
SELECT is((SELECT array_agg(o.label ORDER BY o.label) FROM c4 JOIN o USING (task_id)), ARRAY['A_noop'],
    'task_types NULL means any type in the queue');
SELECT is((SELECT array_agg(DISTINCT t.state::text) FROM taskforge.tasks t JOIN o USING (task_id)), ARRAY['RUNNING'],
    'every task was claimed exactly by the filter that matched it');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
