-- Catalog contract: the hot-path partial indexes exist with their columns and predicates, so claim, promote, recover and prune never scan finished history.
BEGIN;
SELECT plan(38);
SELECT indexes_are('taskforge', 'tasks',
                   ARRAY['tasks_pkey', 'tasks_claim_order_idx', 'tasks_claim_queue_idx', 'tasks_queued_due_idx', 'tasks_retry_due_idx', 'tasks_lease_expiry_idx',
                         'tasks_finished_idx', 'tasks_owner_idx', 'tasks_keyed_due_idx',
                         'tasks_concurrency_key_idx', 'tasks_concurrency_running_idx', 'tasks_ordering_key_idx', 'tasks_ordering_finished_idx',
                         'tasks_rate_key_idx'],
                   'taskforge.tasks has exactly its indexes');
SELECT indexes_are('taskforge', 'task_dependencies', ARRAY['task_dependencies_pkey', 'task_dependencies_parent_idx'],
                   'taskforge.task_dependencies has exactly its indexes');
SELECT indexes_are('taskforge', 'periodic_schedules',
                   ARRAY['periodic_schedules_pkey', 'periodic_schedules_due_idx', 'periodic_schedules_task_type_idx'],
                   'taskforge.periodic_schedules has exactly its indexes');
SELECT has_index('taskforge', 'periodic_schedules', 'periodic_schedules_due_idx', ARRAY['next_fire_at'],
                 'tf_enqueue_periodic finds due schedules and the next tick by next_fire_at');
SELECT indexes_are('taskforge', 'attempts', ARRAY['attempts_pkey', 'attempts_worker_idx', 'attempts_finished_idx'],
                   'taskforge.attempts has exactly its indexes');
SELECT has_index('taskforge', 'tasks', 'tasks_claim_order_idx', ARRAY['priority', 'created_at', 'task_id'], 'claim order index on (priority, created_at, task_id)');
SELECT has_index('taskforge', 'tasks', 'tasks_claim_queue_idx', ARRAY['queue', 'priority', 'created_at', 'task_id'], 'per-queue claim index on (queue, priority, created_at, task_id)');
SELECT has_index('taskforge', 'tasks', 'tasks_queued_due_idx', ARRAY['scheduled_at'], 'due-time index for a delayed QUEUED backlog');
SELECT has_index('taskforge', 'tasks', 'tasks_retry_due_idx', ARRAY['scheduled_at'], 'promotion index on scheduled_at');
SELECT has_index('taskforge', 'tasks', 'tasks_lease_expiry_idx', ARRAY['lease_expires_at'], 'recovery index on lease_expires_at');
SELECT has_index('taskforge', 'tasks', 'tasks_finished_idx', ARRAY['finished_at'], 'retention index on finished_at');
SELECT indexes_are('taskforge', 'idempotency_keys', ARRAY['idempotency_keys_pkey'],
                   'taskforge.idempotency_keys has exactly its primary key');
SELECT col_is_pk('taskforge', 'idempotency_keys', 'idempotency_key', 'an idempotency key is unique in the database');
-- The keyed pick (taskforge._tf_claim_keyed) and the dependency edges from the parent's side.
SELECT has_index('taskforge', 'tasks', 'tasks_keyed_due_idx', ARRAY['scheduled_at'], 'keyed due index on scheduled_at');
SELECT has_index('taskforge', 'tasks', 'tasks_concurrency_key_idx', ARRAY['concurrency_key', 'priority', 'created_at', 'task_id'],
                 'concurrency key index on (concurrency_key, priority, created_at, task_id)');
SELECT has_index('taskforge', 'tasks', 'tasks_concurrency_running_idx', ARRAY['concurrency_key'], 'running-per-concurrency-key index');
SELECT has_index('taskforge', 'tasks', 'tasks_ordering_key_idx', ARRAY['ordering_key', 'task_id'], 'ordering key index on (ordering_key, task_id)');
SELECT has_index('taskforge', 'tasks', 'tasks_ordering_finished_idx', ARRAY['ordering_key', 'finished_at'],
                 'finished-per-ordering-key index on (ordering_key, finished_at)');
SELECT has_index('taskforge', 'tasks', 'tasks_rate_key_idx', ARRAY['rate_key', 'priority', 'created_at', 'task_id'],
                 'rate key index on (rate_key, priority, created_at, task_id)');
SELECT has_index('taskforge', 'task_dependencies', 'task_dependencies_parent_idx', ARRAY['parent_task_id'],
                 'dependency edges by parent (release and cancel of children)');
SELECT is(pg_get_indexdef('taskforge.tasks_claim_order_idx'::regclass) ~ '\(priority DESC, created_at, task_id\)', true,
          'the claim order index sorts priority DESC');

CREATE TEMP TABLE pred AS
SELECT c.relname, pg_get_expr(i.indpred, i.indrelid) AS predicate
  FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
 WHERE c.relnamespace = 'taskforge'::regnamespace;
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_claim_order_idx'), $$(((state)::text = 'QUEUED'::text) AND (NOT keyed))$$,
          'claim order index is partial: QUEUED tasks without flow keys only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_claim_queue_idx'), $$(((state)::text = 'QUEUED'::text) AND (NOT keyed))$$,
          'per-queue claim index is partial: QUEUED tasks without flow keys only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_keyed_due_idx'), $$(((state)::text = 'QUEUED'::text) AND keyed)$$,
          'keyed due index is partial: QUEUED keyed tasks only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_concurrency_key_idx'),
          $$(((state)::text = 'QUEUED'::text) AND (concurrency_key IS NOT NULL))$$,
          'concurrency key index is partial: QUEUED tasks with a concurrency key only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_concurrency_running_idx'),
          $$(((state)::text = 'RUNNING'::text) AND (concurrency_key IS NOT NULL))$$,
          'running-per-key index is partial: RUNNING tasks with a concurrency key only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_ordering_key_idx'), '((ordering_key IS NOT NULL) AND (finished_at IS NULL))',
          'ordering key index is partial: unfinished tasks with an ordering key only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_ordering_finished_idx'),
          '((ordering_key IS NOT NULL) AND (finished_at IS NOT NULL))',
          'finished-per-ordering-key index is partial: finished tasks with an ordering key only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_rate_key_idx'),
          $$(((state)::text = 'QUEUED'::text) AND (rate_key IS NOT NULL) AND (concurrency_key IS NULL) AND (ordering_key IS NULL))$$,
          'rate key index is partial: QUEUED tasks with a rate key and no other key only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_queued_due_idx'), $$(((state)::text = 'QUEUED'::text) AND (NOT keyed))$$,
          'due-time index is partial: QUEUED plain tasks only (disjoint from tasks_keyed_due_idx)');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_retry_due_idx'), $$((state)::text = 'RETRYING'::text)$$, 'promotion index is partial: RETRYING only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_lease_expiry_idx'), $$((state)::text = 'RUNNING'::text)$$, 'recovery index is partial: RUNNING only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_finished_idx'), '(finished_at IS NOT NULL)', 'retention index is partial: finished tasks only');
SELECT hasnt_index('taskforge', 'tasks', 'tasks_idempotency_key_uidx', 'the key is unique through idempotency_keys, not an index of tasks');
SELECT is((SELECT predicate FROM pred WHERE relname = 'tasks_owner_idx'), '(owner_worker_id IS NOT NULL)', 'owner index is partial: owned tasks only');
SELECT is((SELECT predicate FROM pred WHERE relname = 'attempts_finished_idx'), '(finished_at IS NOT NULL)', 'attempt finish index is partial');
SELECT col_is_pk('taskforge', 'attempts', ARRAY['task_id', 'attempt_number'], 'attempts are unique per (task_id, attempt_number)');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
