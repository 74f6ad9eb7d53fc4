-- tf_pause_queue: a NULL or malformed queue name is TF400 naming queue, and nothing is written.
BEGIN;
SELECT plan(4);
SELECT throws_ok($$SELECT taskforge.tf_pause_queue(NULL)$$, 'TF400',
                 'queue: must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$, got NULL', 'a NULL queue is TF400');
SELECT throws_ok($$SELECT taskforge.tf_pause_queue('-bad')$$, 'TF400',
                 'queue: must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$, got ''-bad''', 'a malformed queue is TF400');
SELECT throws_ok(format('SELECT taskforge.tf_pause_queue(%L)', repeat('q', 64)), 'TF400', NULL, 'a 64-character queue name is TF400');
SELECT is_empty($$SELECT * FROM taskforge.queues$$, 'nothing was written');
SELECT * FROM finish();
ROLLBACK;
