-- Domains: the rules of single columns, checked where a value is written into such a column
-- (INSERT, or an UPDATE that sets it), never re-read for columns an UPDATE leaves alone.
--
-- Why domains and not table CHECKs: PostgreSQL prepares every CHECK constraint of a table for
-- each INSERT or UPDATE statement, parsing its stored expression again (ExecConstraints,
-- stringToNode), whatever columns the statement changes; a worker's every claim and finalize
-- is such a statement. A domain's constraints are prepared once per session and kept in the
-- type cache. The rules that tie several columns together stay table CHECKs (20_tables.sql).
-- Measured: the single-column CHECKs of tasks and attempts cost 17 % of a worker turn's
-- instructions (docs/benchmarks.md, "The hot path in SQL"). A domain violation is SQLSTATE
-- 23514 (check_violation), like a table CHECK, and names the domain's constraint.
--
-- Clients see the base types: PostgreSQL sends the base type of a domain column to clients,
-- and functions return base types (RETURNS TABLE columns are declared text, int, jsonb).

-- The task state machine of docs/state-machine.md.
CREATE DOMAIN taskforge.task_state AS text
    CONSTRAINT task_state_known
        CHECK (VALUE IN ('BLOCKED', 'QUEUED', 'RUNNING', 'RETRYING', 'SUCCEEDED', 'FAILED', 'CANCELLED'));
COMMENT ON DOMAIN taskforge.task_state IS
    'A task state: BLOCKED | QUEUED | RUNNING | RETRYING | SUCCEEDED | FAILED | CANCELLED (docs/state-machine.md).';

-- The states of one attempt, and what ended it.
CREATE DOMAIN taskforge.attempt_state AS text
    CONSTRAINT attempt_state_known
        CHECK (VALUE IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'ABANDONED', 'CANCELLED'));
COMMENT ON DOMAIN taskforge.attempt_state IS
    'An attempt state: RUNNING | SUCCEEDED | FAILED | ABANDONED | CANCELLED.';
-- What the worker reported (succeeded | failed | retryable | cancelled), or what recovery found:
-- lease_expired, or timed_out (the lease ran to the attempt's deadline).
CREATE DOMAIN taskforge.attempt_outcome AS text
    CONSTRAINT attempt_outcome_known
        CHECK (VALUE IN ('succeeded', 'failed', 'retryable', 'cancelled', 'lease_expired', 'timed_out'));
COMMENT ON DOMAIN taskforge.attempt_outcome IS
    'How an attempt ended: succeeded | failed | retryable | cancelled (reported) | lease_expired | timed_out (recovery).';
CREATE DOMAIN taskforge.attempt_number AS int
    CONSTRAINT attempt_number_positive CHECK (VALUE >= 1);
COMMENT ON DOMAIN taskforge.attempt_number IS 'An attempt number: 1 for the first attempt of a task, then 2, 3, ...';

-- Submitted request fields (tasks and periodic schedules).
CREATE DOMAIN taskforge.json_object AS jsonb
    CONSTRAINT json_object_is_object CHECK (jsonb_typeof(VALUE) = 'object');
COMMENT ON DOMAIN taskforge.json_object IS 'A JSON object (payloads are objects, never arrays or scalars).';
CREATE DOMAIN taskforge.task_priority AS int
    CONSTRAINT task_priority_range CHECK (VALUE BETWEEN -32768 AND 32767);
COMMENT ON DOMAIN taskforge.task_priority IS 'A priority, -32768..32767 (higher runs first).';
CREATE DOMAIN taskforge.attempt_budget AS int
    CONSTRAINT attempt_budget_range CHECK (VALUE BETWEEN 1 AND 10000);
COMMENT ON DOMAIN taskforge.attempt_budget IS 'A task''s max_attempts: 1..10000 attempts in all (first, retries, crash replacements).';
CREATE DOMAIN taskforge.idempotency_key AS text
    CONSTRAINT idempotency_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);
COMMENT ON DOMAIN taskforge.idempotency_key IS 'An idempotency key, 1..200 characters.';
-- A flow-control key of a task (rate_key, concurrency_key, ordering_key): any text of 1..200
-- characters, so that a tenant or entity id can be used as it is.
CREATE DOMAIN taskforge.flow_key AS text
    CONSTRAINT flow_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);
COMMENT ON DOMAIN taskforge.flow_key IS 'A rate, concurrency or ordering key, 1..200 characters.';
-- The name format is added in 50_name_rules.sql, from its one home (taskforge._tf_name_pattern).
CREATE DOMAIN taskforge.queue_name AS text;
COMMENT ON DOMAIN taskforge.queue_name IS 'A queue name (format: taskforge._tf_name_pattern(''queue'')).';
-- The format is added in 50_name_rules.sql, from its one home (taskforge._tf_traceparent_ok).
CREATE DOMAIN taskforge.traceparent AS text;
COMMENT ON DOMAIN taskforge.traceparent IS
    'A W3C trace context traceparent header value (format: taskforge._tf_traceparent_ok).';

-- Private: the verdict on one finalize element of a batch (taskforge._tf_turn): the element, why
-- it is refused (NULL: accepted), the task state before and after, and what the attempt row
-- receives. Held in an array sorted by task_id between the two statements of a turn.
CREATE TYPE taskforge._tf_verdict AS (
    task_id        bigint,
    attempt_number int,
    reason         text,
    old_state      text,
    new_state      text,
    outcome        text,
    result         jsonb,
    error          jsonb
);
COMMENT ON TYPE taskforge._tf_verdict IS
    'Private: the verdict on one finalize element of a batch (taskforge._tf_turn).';
