-- The fingerprint keeps the era of scheduled_at: the same calendar date before and after Christ is a different request (TF409), while the same instant stays a replay.
BEGIN;
SELECT plan(4);
SELECT ok((SELECT created FROM taskforge.tf_submit('noop', queue => 'q_era', scheduled_at => '0001-01-01 00:00+00 BC', idempotency_key => 'k-era')),
          'the first submit creates the task');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue => 'q_era', scheduled_at => '0001-01-01 00:00+00', idempotency_key => 'k-era')$$,
                 'TF409', NULL, 'the same date AD is a different request');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', queue => 'q_era', scheduled_at => '0001-01-01 00:00+00 BC', idempotency_key => 'k-era')),
          false, 'the same instant is a replay');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
