-- _tf_attempt_state_after (private): the final state an attempt takes for each outcome; unknown or NULL outcomes give NULL. A cancel request never changes the attempt's own state (the worker's report is history).
BEGIN;
SELECT plan(9);

SELECT is(taskforge._tf_attempt_state_after('succeeded'), 'SUCCEEDED', 'succeeded -> SUCCEEDED');
SELECT is(taskforge._tf_attempt_state_after('failed'), 'FAILED', 'failed -> FAILED');
SELECT is(taskforge._tf_attempt_state_after('retryable'), 'FAILED', 'retryable -> FAILED (the attempt failed; the task may retry)');
SELECT is(taskforge._tf_attempt_state_after('cancelled'), 'CANCELLED', 'cancelled -> CANCELLED');
SELECT is(taskforge._tf_attempt_state_after('lease_expired'), 'ABANDONED', 'lease_expired -> ABANDONED (recovery)');
SELECT is(taskforge._tf_attempt_state_after('bogus'), NULL, 'an unknown outcome gives NULL');
SELECT is(taskforge._tf_attempt_state_after('FAILED'), NULL, 'outcomes are lower case: FAILED gives NULL');
SELECT is(taskforge._tf_attempt_state_after(NULL), NULL, 'a NULL outcome gives NULL');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
