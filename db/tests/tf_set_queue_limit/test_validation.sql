-- tf_set_queue_limit: max_running outside 1..1000000 and bad queue names are TF400 naming the argument; nothing is written.
BEGIN;
SELECT plan(5);
SELECT throws_ok($$SELECT taskforge.tf_set_queue_limit('q_limit_v', 0)$$, 'TF400', NULL, 'max_running 0 is TF400');
SELECT throws_like($$SELECT taskforge.tf_set_queue_limit('q_limit_v', -1)$$, 'max_running:%', 'max_running -1 names max_running');
SELECT throws_ok($$SELECT taskforge.tf_set_queue_limit('q_limit_v', 1000001)$$, 'TF400', NULL, 'max_running 1000001 is TF400');
SELECT throws_like($$SELECT taskforge.tf_set_queue_limit(NULL, 2)$$, 'queue:%', 'a NULL queue names queue');
SELECT is_empty($$SELECT * FROM taskforge.queues$$, 'nothing was written');
SELECT * FROM finish();
ROLLBACK;
