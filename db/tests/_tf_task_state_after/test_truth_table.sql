-- _tf_task_state_after (private): the task state after its current attempt ends, for every outcome x cancel request x budget left or spent, plus unknown outcomes (NULL). The one rule used by tf_finalize, the batch finalize and tf_recover.
BEGIN;
SELECT plan(8);

-- (outcome, cancel_requested, attempt_count, max_attempts) -> expected state
CREATE TEMP TABLE cases (outcome text, cancel boolean, attempt_count int, max_attempts int, expected text);
INSERT INTO cases VALUES
    -- succeeded: always SUCCEEDED, even after a cancel request or on the last attempt
    ('succeeded', false, 1, 3, 'SUCCEEDED'), ('succeeded', false, 3, 3, 'SUCCEEDED'),
    ('succeeded', true, 1, 3, 'SUCCEEDED'),  ('succeeded', true, 3, 3, 'SUCCEEDED'),
    -- cancelled: always CANCELLED
    ('cancelled', false, 1, 3, 'CANCELLED'), ('cancelled', false, 3, 3, 'CANCELLED'),
    ('cancelled', true, 1, 3, 'CANCELLED'),  ('cancelled', true, 3, 3, 'CANCELLED'),
    -- failed: terminal FAILED; CANCELLED after a cancel request
    ('failed', false, 1, 3, 'FAILED'),       ('failed', false, 3, 3, 'FAILED'),
    ('failed', true, 1, 3, 'CANCELLED'),     ('failed', true, 3, 3, 'CANCELLED'),
    -- retryable: RETRYING while budget remains, else FAILED; CANCELLED after a cancel request
    ('retryable', false, 1, 3, 'RETRYING'),  ('retryable', false, 2, 3, 'RETRYING'), ('retryable', false, 3, 3, 'FAILED'),
    ('retryable', false, 1, 1, 'FAILED'),    ('retryable', true, 1, 3, 'CANCELLED'), ('retryable', true, 3, 3, 'CANCELLED'),
    -- lease_expired (recovery): QUEUED while budget remains (no backoff), else FAILED; CANCELLED after a cancel request
    ('lease_expired', false, 1, 3, 'QUEUED'), ('lease_expired', false, 2, 3, 'QUEUED'), ('lease_expired', false, 3, 3, 'FAILED'),
    ('lease_expired', false, 1, 1, 'FAILED'), ('lease_expired', true, 1, 3, 'CANCELLED'), ('lease_expired', true, 3, 3, 'CANCELLED'),
    -- a retry budget raised by tf_retry: attempt_count far below max_attempts
    ('retryable', false, 3, 10000, 'RETRYING'), ('lease_expired', false, 9999, 10000, 'QUEUED'), ('retryable', false, 10000, 10000, 'FAILED');

SELECT is_empty($$SELECT outcome, cancel, attempt_count, max_attempts, expected, taskforge._tf_task_state_after(outcome, cancel, attempt_count, max_attempts)
                    FROM cases WHERE taskforge._tf_task_state_after(outcome, cancel, attempt_count, max_attempts) IS DISTINCT FROM expected$$,
    'every row of the truth table gives the expected state');
SELECT is((SELECT count(*)::int FROM cases), 27, 'the table covers 27 cases');
-- Unknown outcomes give NULL (callers validate first), with or without a cancel request.
SELECT is(taskforge._tf_task_state_after('bogus', false, 1, 3), NULL, 'an unknown outcome gives NULL');
SELECT is(taskforge._tf_task_state_after('SUCCEEDED', false, 1, 3), NULL, 'outcomes are lower case: SUCCEEDED gives NULL');
SELECT is(taskforge._tf_task_state_after('bogus', true, 1, 3), NULL, 'an unknown outcome gives NULL even with a cancel request');
SELECT is(taskforge._tf_task_state_after(NULL, true, 1, 3), NULL, 'a NULL outcome gives NULL, even with a cancel request');
SELECT is(taskforge._tf_task_state_after(NULL, false, 1, 3), NULL, 'a NULL outcome gives NULL');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
