-- tf_task_types lists every registered task type with its backoff policy and description, and follows tf_register_task_type.
BEGIN;
SELECT plan(4);
SELECT set_eq($$SELECT task_type FROM taskforge.tf_task_types$$, $$SELECT task_type FROM taskforge.task_types$$,
              'one row per registered task type');
SELECT results_eq($$SELECT backoff_base_seconds, backoff_cap_seconds, backoff_jitter FROM taskforge.tf_task_types WHERE task_type = 'noop'$$,
                  $$VALUES (2::double precision, 300::double precision, 0.2::double precision)$$,
                  'the default backoff policy (seconds, jitter fraction)');
SELECT taskforge.tf_register_task_type('view_task_types.send', backoff_base_seconds => 5, backoff_cap_seconds => 600,
                                       description => 'Sends <one> e-mail');
SELECT results_eq($$SELECT task_type, backoff_base_seconds, backoff_cap_seconds, description FROM taskforge.tf_task_types
                     WHERE task_type = 'view_task_types.send'$$,
                  $$VALUES ('view_task_types.send'::text, 5::double precision, 600::double precision, 'Sends <one> e-mail'::text)$$,
                  'a newly registered type appears with its policy and description');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
