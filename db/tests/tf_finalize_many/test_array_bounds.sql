-- Batch arrays are read by position, whatever their lower bounds: an element of '[2:3]={...}' or '[0:1]={...}' is checked (TF400 naming it by its 1-based position, nothing written), never skipped or misreported.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_bounds') AS id;
CREATE TEMP TABLE s AS SELECT (taskforge.tf_submit('noop', '{}', 'q_bounds')).task_id FROM generate_series(1, 2);
CREATE TEMP TABLE c AS SELECT task_id, attempt_number FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_bounds'], 300, 2);
CREATE TEMP TABLE ids AS SELECT min(task_id) AS a, max(task_id) AS b FROM c;

SELECT throws_ok(format($$SELECT * FROM taskforge.tf_finalize_many(%L, '[2:3]={%s,%s}', '[2:3]={1,0.6}', '{succeeded,succeeded}')$$,
        (SELECT id FROM w), (SELECT a FROM ids), (SELECT b FROM ids)),
    'TF400', 'attempt_numbers[2]: must be between 1 and 2147483647, got 0.6',
    'a fractional attempt number in an array starting at 2 is refused, named by its position');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM c) AND state = 'RUNNING'), 2,
    'nothing was finalized');
SELECT throws_ok(format($$SELECT * FROM taskforge.tf_renew_many(%L, '[2:3]={%s,1e20}', '{1,1}')$$, (SELECT id FROM w), (SELECT a FROM ids)),
    'TF400', 'task_ids[2]: must be a whole number within bigint, got 100000000000000000000',
    'a task id beyond bigint in an array starting at 2 is TF400, not 22003');
SELECT throws_ok(format($$SELECT * FROM taskforge.tf_renew_many(%L, '[0:1]={%s,1e20}', '{1,1}')$$, (SELECT id FROM w), (SELECT a FROM ids)),
    'TF400', 'task_ids[2]: must be a whole number within bigint, got 100000000000000000000',
    'and in an array starting at 0 it is reported as what it is, not as a NULL');
SELECT throws_ok(format($$SELECT * FROM taskforge.tf_finalize_and_claim(%L, '[5:6]={%s,%s}', '{1,1}', '{succeeded,succeeded}', max_tasks => 0)$$,
        (SELECT id FROM w), (SELECT a FROM ids), (SELECT a FROM ids)),
    'TF400', format('task_ids[2]: task %s appears more than once in one call', (SELECT a FROM ids)),
    'a repeated task is named by position and id whatever the bounds');
SELECT is((SELECT count(*)::int FROM taskforge.tf_renew_many((SELECT id FROM w), ('[7:8]={' || (SELECT a FROM ids) || ',' || (SELECT b FROM ids) || '}')::numeric[],
        '[3:4]={1,1}') WHERE renewed), 2, 'valid arrays with other bounds work, element by element');
SELECT is((SELECT array_agg(accepted ORDER BY task_id) FROM taskforge.tf_finalize_many((SELECT id FROM w),
        ('[2:3]={' || (SELECT a FROM ids) || ',' || (SELECT b FROM ids) || '}')::numeric[], '[0:1]={1,1}', '{succeeded,succeeded}')),
    ARRAY[true, true], 'and finalize');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM c) AND state = 'SUCCEEDED'), 2, 'both succeeded');
SELECT * FROM finish();
ROLLBACK;
