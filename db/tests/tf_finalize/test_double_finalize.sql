-- tf_finalize of an attempt that is already finalized is refused with not_running and changes nothing, whatever the second outcome.
BEGIN;
SELECT plan(13);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('findouble.nodelay', 0, 0, 0)$$, 'register a type without backoff');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_finalize_double') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_finalize_double');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_double']);
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'succeeded', '{"first": true}');
SELECT is((SELECT accepted FROM f1), true, 'the first finalize is accepted');
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN s USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);

CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'failed', error => '{"message": "again"}');
SELECT is((SELECT accepted FROM f2), false, 'a second finalize of the same attempt is refused');
SELECT is((SELECT reason FROM f2), 'not_running', 'reason not_running');
SELECT is((SELECT task_state FROM f2), 'SUCCEEDED', 'the returned state is the stored SUCCEEDED');
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'succeeded', '{"second": true}');
SELECT is((SELECT accepted FROM f3), false, 'a repeated success is refused as well');
SELECT is((SELECT t::text FROM taskforge.tasks t JOIN s USING (task_id)), (SELECT x::text FROM snap_task x), 'the task keeps its first outcome and result');
SELECT is((SELECT a::text FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT x::text FROM snap_att x), 'the attempt keeps its first outcome');

-- A retryable failure followed by a late success of the same attempt.
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_submit('findouble.nodelay', '{}', 'q_finalize_double_retry');
CREATE TEMP TABLE rc AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_finalize_double_retry']);
CREATE TEMP TABLE rf1 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM r), (SELECT id FROM w), 1, 'retryable');
SELECT is((SELECT task_state FROM rf1), 'RETRYING', 'the first finalize made the task RETRYING');
CREATE TEMP TABLE rf2 AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM r), (SELECT id FROM w), 1, 'succeeded');
SELECT is((SELECT reason FROM rf2), 'not_running', 'a second finalize of the retried attempt is refused with not_running');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN r USING (task_id)), 'RETRYING', 'the task stays RETRYING');
SELECT is((SELECT a.state FROM taskforge.attempts a JOIN r USING (task_id)), 'FAILED', 'the attempt stays FAILED');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
