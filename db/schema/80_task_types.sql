-- Built-in synthetic task types (the handlers ship with the Python worker). Their payloads:
--   noop            {}                  does nothing
--   sleep           {"ms": int}         waits ms milliseconds
--   fail_once       {}                  retryable failure on attempt 1, success afterwards
--   fail            {}                  ordinary (terminal) error
--   retryable_fail  {}                  always a retryable error (exhausts its budget)
--   echo            any object          returns its payload as the result
--   async_noop      {}                  does nothing (an async def handler)
--   async_sleep     {"ms": int}         waits ms milliseconds (an async def handler)
-- Users add their own types with taskforge.tf_register_task_type.
SELECT taskforge.tf_register_task_type('noop', description => 'Does nothing; measures coordination cost.');
SELECT taskforge.tf_register_task_type('sleep', description => 'Waits payload.ms milliseconds.');
SELECT taskforge.tf_register_task_type(
    'fail_once', description => 'Retryable failure on attempt 1, success afterwards.'
);
SELECT taskforge.tf_register_task_type('fail', description => 'Always fails with an ordinary (terminal) error.');
SELECT taskforge.tf_register_task_type('retryable_fail', description => 'Always fails with a retryable error.');
SELECT taskforge.tf_register_task_type('echo', description => 'Returns its payload as the result.');
SELECT taskforge.tf_register_task_type(
    'async_noop', description => 'Does nothing, as an async def handler (the worker''s event loop).'
);
SELECT taskforge.tf_register_task_type(
    'async_sleep', description => 'Waits payload.ms milliseconds, as an async def handler (the worker''s event loop).'
);
