-- tf_set_concurrency_limit: set, replace and remove (NULL) a concurrency key's limit; each call returns the limit before it (NULL = unlimited); the key's row is created when missing and kept when the limit is removed.
BEGIN;
SELECT plan(12);

SELECT is(taskforge.tf_set_concurrency_limit('ck_set', 2), NULL::int, 'a first limit returns NULL (was unlimited)');
SELECT results_eq($$SELECT concurrency_key, max_running, running, queued FROM taskforge.tf_concurrency_keys
                     WHERE concurrency_key = 'ck_set'$$,
                  $$VALUES ('ck_set'::text, 2, 0::bigint, 0::bigint)$$,
                  'the key need not have tasks: its row is created, tf_concurrency_keys shows it');
SELECT is(taskforge.tf_set_concurrency_limit('ck_set', 5), 2, 'raising returns the previous limit');
SELECT is(taskforge.tf_set_concurrency_limit('ck_set', 1), 5, 'lowering returns the previous limit');
SELECT is((SELECT max_running FROM taskforge.concurrency_keys WHERE concurrency_key = 'ck_set'), 1, 'the new limit is stored');
SELECT is(taskforge.tf_set_concurrency_limit('ck_set', NULL), 1, 'removing returns the limit it removed');
SELECT results_eq($$SELECT max_running FROM taskforge.concurrency_keys WHERE concurrency_key = 'ck_set'$$,
                  $$VALUES (NULL::int)$$, 'the row stays, unlimited (it still takes part in fair claiming)');
SELECT is(taskforge.tf_set_concurrency_limit('ck_set', NULL), NULL::int, 'removing again returns NULL');

-- A key that already has tasks: its row (from tf_submit) gets the limit; the view counts its tasks.
CREATE TEMP TABLE t AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_ck_set', concurrency_key => 'ck_set_tasks');
SELECT is(taskforge.tf_set_concurrency_limit('ck_set_tasks', 3), NULL::int,
          'a key submitted without a limit is unlimited: NULL is returned');
SELECT results_eq($$SELECT max_running, running, queued FROM taskforge.tf_concurrency_keys
                     WHERE concurrency_key = 'ck_set_tasks'$$,
                  $$VALUES (3, 0::bigint, 1::bigint)$$, 'tf_concurrency_keys: the limit, no RUNNING, one QUEUED');
SELECT is((SELECT count(*)::int FROM taskforge.concurrency_keys WHERE concurrency_key IN ('ck_set', 'ck_set_tasks')), 2,
          'one row per key');

SELECT is(taskforge.tf_set_concurrency_limit(repeat('c', 200), 1000000), NULL::int,
          'a 200-character key and max_running 1000000 are accepted');
SELECT * FROM finish();
ROLLBACK;
