-- tf_register_worker validates its informational fields too: queues and task_types arrays, pid and hostname; a refused call writes no worker row.
BEGIN;
SELECT plan(8);
CREATE TEMP TABLE before AS SELECT count(*) AS n FROM taskforge.workers;
SELECT throws_like($$SELECT taskforge.tf_register_worker('w', queues => ARRAY['bad queue'])$$,
                   'queues: every element must match%', 'a malformed queue is refused');
SELECT throws_like($$SELECT taskforge.tf_register_worker('w', queues => ARRAY[NULL::text])$$,
                   'queues: %', 'a NULL queue element is refused');
SELECT throws_like($$SELECT taskforge.tf_register_worker('w', task_types => ARRAY['NOPE'])$$,
                   'task_types: every element must match%', 'a malformed task type is refused');
SELECT throws_ok($$SELECT taskforge.tf_register_worker('w', pid => -5)$$,
                 'TF400', 'pid: must be between 1 and 2147483647, got -5', 'a negative pid is refused');
SELECT throws_like($$SELECT taskforge.tf_register_worker('w', hostname => repeat('h', 256))$$,
                   'hostname: must be at most 255 characters%', 'an overlong hostname is refused');
SELECT is((SELECT count(*) FROM taskforge.workers), (SELECT n FROM before), 'no worker row was written by the refused calls');
SELECT isnt(taskforge.tf_register_worker('w', hostname => 'h1', pid => 42, queues => ARRAY['default', 'emails.v2'],
                                         task_types => ARRAY['noop', 'resize_image']), NULL,
            'well-formed informational fields are accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
