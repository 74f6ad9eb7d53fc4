-- tf_backoff never returns a negative delay or one above the cap, never overflows, for every attempt number from 1 to 2^31-1.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE attempts_sample AS
    SELECT n FROM generate_series(1, 2000) n
    UNION SELECT (2 ^ e)::int FROM generate_series(11, 30) e
    UNION SELECT (2 ^ e)::int - 1 FROM generate_series(11, 30) e
    UNION VALUES (1000000), (2147483646), (2147483647);
CREATE TEMP TABLE samples AS
    SELECT n, base, cap, jitter, taskforge.tf_backoff(n, base, cap, jitter) AS d
      FROM attempts_sample,
           (VALUES (0.001::float8), (2), (86400)) b(base),
           (VALUES (0.5::float8), (300), (86400)) c(cap),
           (VALUES (0::float8), (0.2), (1)) j(jitter);

SELECT is((SELECT count(*)::int FROM samples), 2043 * 27, 'all 55,161 combinations (2,043 attempt numbers x 27 policies) were computed without error');
SELECT is((SELECT count(*)::int FROM samples WHERE d IS NULL OR d = 'NaN'::float8), 0, 'no delay is NULL or NaN');
SELECT is((SELECT count(*)::int FROM samples WHERE d < 0), 0, 'no delay is negative');
SELECT is((SELECT count(*)::int FROM samples WHERE d > cap), 0, 'no delay is above the cap');
-- Never above the uncapped maximum base * 2^(n-1) * (1 + jitter) (with a rounding margin).
SELECT is((SELECT count(*)::int FROM samples WHERE n <= 60 AND d > base * 2 ^ (n - 1) * (1 + jitter) * (1 + 1e-12)), 0,
    'no delay is above base * 2^(n-1) * (1 + jitter)');
SELECT is((SELECT count(*)::int FROM samples WHERE n <= 60 AND d < least(cap, base * 2 ^ (n - 1) * (1 - jitter)) * (1 - 1e-12)), 0,
    'no delay is below min(cap, base * 2^(n-1) * (1 - jitter))');
SELECT is((SELECT count(*)::int FROM samples WHERE n >= 64 AND jitter < 1 AND d <> cap), 0,
    'from attempt 64 on (jitter < 1) the delay is the cap');

SELECT is(taskforge.tf_backoff(2147483647), 300::float8, 'attempt 2^31-1 with the defaults waits the 300 s cap');
SELECT lives_ok($$SELECT taskforge.tf_backoff(2147483647, 86400, 86400, 1)$$, 'the largest arguments do not overflow');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
