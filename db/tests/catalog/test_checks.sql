-- Catalog contract: the key CHECK constraints exist, are validated, and refuse rows that break the state machine.
BEGIN;
SELECT plan(50);
SELECT has_check('taskforge', 'tasks', 'taskforge.tasks has CHECK constraints');
SELECT has_check('taskforge', 'attempts', 'taskforge.attempts has CHECK constraints');
SELECT has_check('taskforge', 'workers', 'taskforge.workers has CHECK constraints');
SELECT has_check('taskforge', 'task_types', 'taskforge.task_types has CHECK constraints');
SELECT has_check('taskforge', 'schedulers', 'taskforge.schedulers has CHECK constraints');
SELECT col_has_check('taskforge', 'schedulers', 'heartbeat_seconds', 'schedulers.heartbeat_seconds is checked');
SELECT has_check('taskforge', 'task_dependencies', 'taskforge.task_dependencies has CHECK constraints');
SELECT has_check('taskforge', 'rate_limits', 'taskforge.rate_limits has CHECK constraints');
SELECT has_check('taskforge', 'concurrency_keys', 'taskforge.concurrency_keys has CHECK constraints');
SELECT has_check('taskforge', 'maintenance_errors', 'taskforge.maintenance_errors has CHECK constraints');
-- Single-column rules of the hot tables are domains (db/schema/15_domains.sql): the column has
-- the domain's type, and the domain its CHECK constraint.
SELECT col_type_is('taskforge', 'tasks', 'state', 'taskforge', 'task_state', 'tasks.state is checked (domain task_state)');
SELECT col_type_is('taskforge', 'tasks', 'payload', 'taskforge', 'json_object', 'tasks.payload is checked (domain json_object)');
SELECT col_type_is('taskforge', 'tasks', 'queue', 'taskforge', 'queue_name', 'tasks.queue is checked (domain queue_name)');
SELECT col_type_is('taskforge', 'tasks', 'priority', 'taskforge', 'task_priority', 'tasks.priority is checked (domain task_priority)');
SELECT col_type_is('taskforge', 'tasks', 'max_attempts', 'taskforge', 'attempt_budget', 'tasks.max_attempts is checked (domain attempt_budget)');
SELECT col_type_is('taskforge', 'tasks', 'idempotency_key', 'taskforge', 'idempotency_key', 'tasks.idempotency_key is checked (domain idempotency_key)');
SELECT col_type_is('taskforge', 'tasks', 'traceparent', 'taskforge', 'traceparent', 'tasks.traceparent is checked (domain traceparent)');
SELECT col_type_is('taskforge', 'tasks', 'rate_key', 'taskforge', 'flow_key', 'tasks.rate_key is checked (domain flow_key)');
SELECT col_type_is('taskforge', 'tasks', 'concurrency_key', 'taskforge', 'flow_key', 'tasks.concurrency_key is checked (domain flow_key)');
SELECT col_type_is('taskforge', 'tasks', 'ordering_key', 'taskforge', 'flow_key', 'tasks.ordering_key is checked (domain flow_key)');
SELECT col_type_is('taskforge', 'attempts', 'state', 'taskforge', 'attempt_state', 'attempts.state is checked (domain attempt_state)');
SELECT col_type_is('taskforge', 'attempts', 'outcome', 'taskforge', 'attempt_outcome', 'attempts.outcome is checked (domain attempt_outcome)');
SELECT col_type_is('taskforge', 'attempts', 'attempt_number', 'taskforge', 'attempt_number', 'attempts.attempt_number is checked (domain attempt_number)');
SELECT set_eq($$SELECT t.typname::text || '.' || c.conname::text FROM pg_catalog.pg_constraint c
                  JOIN pg_catalog.pg_type t ON t.oid = c.contypid
                 WHERE t.typnamespace = 'taskforge'::regnamespace AND c.contype = 'c' AND c.convalidated$$,
              $$VALUES ('task_state.task_state_known'), ('attempt_state.attempt_state_known'),
                       ('attempt_outcome.attempt_outcome_known'), ('attempt_number.attempt_number_positive'),
                       ('json_object.json_object_is_object'), ('task_priority.task_priority_range'),
                       ('attempt_budget.attempt_budget_range'), ('idempotency_key.idempotency_key_length'),
                       ('queue_name.queue_name_format'), ('traceparent.traceparent_format'),
                       ('flow_key.flow_key_length')$$,
              'every domain of the schema carries its validated CHECK constraint');
SELECT col_has_check('taskforge', 'workers', 'heartbeat_seconds', 'workers.heartbeat_seconds is checked');
SELECT col_has_check('taskforge', 'task_types', 'backoff_jitter', 'task_types.backoff_jitter is checked');

CREATE TEMP TABLE cons AS
SELECT conname, convalidated FROM pg_catalog.pg_constraint WHERE connamespace = 'taskforge'::regnamespace AND contype = 'c';
SELECT set_has('SELECT conname::text FROM cons',
               $$SELECT unnest(ARRAY['tasks_row_rules', 'attempts_row_rules',
                     'workers_heartbeat_after_start', 'schedulers_heartbeat_after_start', 'schedulers_stop_after_start',
                     'task_dependencies_not_self', 'rate_limits_tokens_range'])$$,
               'the multi-column state-machine constraints exist');
SELECT is_empty('SELECT conname FROM cons WHERE NOT convalidated', 'every CHECK constraint is validated (no NOT VALID left)');

-- The constraints refuse broken rows (SQLSTATE 23514 check_violation, 23505 unique_violation).
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('catalog-checks-w1') AS id;
CREATE TEMP TABLE sub AS SELECT task_id FROM taskforge.tf_submit('noop', queue => 'catalog_checks', max_attempts => 1);
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['catalog_checks']);
DO $$ BEGIN PERFORM set_config('tftest.task_id', (SELECT task_id FROM sub)::text, true); END $$;
SELECT throws_ok($$UPDATE taskforge.tasks SET owner_worker_id = NULL WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "tasks" violates check constraint "tasks_owner_iff_running"', 'a RUNNING task without owner is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET state = 'QUEUED', owner_worker_id = NULL, lease_expires_at = NULL WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "tasks" violates check constraint "tasks_queued_has_budget"', 'a QUEUED task without attempts left is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET state = 'SUCCEEDED', owner_worker_id = NULL, lease_expires_at = NULL WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "tasks" violates check constraint "tasks_finished_iff_terminal"', 'a terminal task without finished_at is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET attempt_count = 2 WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "tasks" violates check constraint "tasks_attempts_within_budget"', 'more attempts than the budget is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET state = 'PAUSED' WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', NULL, 'an unknown task state is refused');
SELECT throws_ok($$UPDATE taskforge.attempts SET state = 'SUCCEEDED' WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "attempts" violates check constraint "attempts_final_iff_finished"', 'a final attempt state without finished_at and outcome is refused');
SELECT throws_ok($$UPDATE taskforge.attempts SET state = 'ABANDONED', outcome = 'lease_expired', finished_at = started_at,
                                               lease_expires_at = started_at + interval '1 minute'
                   WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "attempts" violates check constraint "attempts_abandoned_after_expiry"', 'an attempt abandoned before its lease expired is refused');
SELECT throws_ok($$UPDATE taskforge.attempts SET finished_at = started_at - interval '1 second', state = 'FAILED', outcome = 'failed'
                   WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', 'new row for relation "attempts" violates check constraint "attempts_finished_after_start"', 'an attempt finishing before it started is refused');
SELECT throws_ok($$INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, started_at, lease_expires_at)
                   SELECT task_id, 1, worker_id, 'RUNNING', started_at, lease_expires_at FROM taskforge.attempts
                    WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23505', NULL, 'a second attempt with the same number is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET payload = '[1, 2]' WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', NULL, 'a payload that is not a JSON object is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET traceparent = 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
                    WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', NULL, 'a traceparent that breaks the W3C format is refused');
SELECT throws_ok($$UPDATE taskforge.tasks SET rate_key = '' WHERE task_id = current_setting('tftest.task_id')::bigint$$,
                 '23514', NULL, 'an empty flow key is refused (domain flow_key)');
SELECT throws_ok($$INSERT INTO taskforge.task_dependencies (child_task_id, parent_task_id)
                   VALUES (current_setting('tftest.task_id')::bigint, current_setting('tftest.task_id')::bigint)$$,
                 '23514', NULL, 'a task depending on itself is refused');
-- Each rule of the row-rule CHECKs (taskforge._tf_task_row_ok, _tf_attempt_row_ok) reports its own name as the constraint.
CREATE FUNCTION pg_temp.violated(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_constraint text;
BEGIN
    EXECUTE statement;
    RETURN NULL;
EXCEPTION WHEN check_violation THEN
    GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
    RETURN v_constraint;
END $$;
SELECT is(pg_temp.violated($$UPDATE taskforge.tasks SET cancel_reason = 'why' WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          'tasks_cancel_reason_needs_request', 'a cancel reason without a cancel request is refused, the rule named');
SELECT is(pg_temp.violated($$UPDATE taskforge.tasks SET fingerprint = '\x00' WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          'tasks_fingerprint_iff_key', 'a fingerprint without an idempotency key is refused, the rule named');
SELECT is(pg_temp.violated($$UPDATE taskforge.tasks SET state = 'RETRYING', owner_worker_id = NULL, lease_expires_at = NULL
                             WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          'tasks_retrying_has_budget', 'a RETRYING task without attempts left is refused, the rule named');
SELECT is(pg_temp.violated($$UPDATE taskforge.attempts SET state = 'SUCCEEDED' WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          'attempts_final_iff_finished', 'an attempts rule is named as the constraint');
SELECT is(pg_temp.violated($$UPDATE taskforge.tasks SET owner_worker_id = NULL, lease_expires_at = NULL WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          'tasks_owner_iff_running', 'an owner rule is named as the constraint');
SELECT is(pg_temp.violated($$UPDATE taskforge.tasks SET cancel_reason = NULL WHERE task_id = current_setting('tftest.task_id')::bigint$$),
          NULL, 'a row that keeps every rule passes');
SELECT volatility_is('taskforge', '_tf_task_row_ok', 'immutable', 'the tasks row rules are IMMUTABLE (a CHECK may call only such)');
SELECT volatility_is('taskforge', '_tf_attempt_row_ok', 'immutable', 'the attempts row rules are IMMUTABLE');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
