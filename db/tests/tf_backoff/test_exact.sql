-- tf_backoff without jitter is exactly min(cap, base * 2^(n-1)); a zero base or zero cap gives 0.
BEGIN;
SELECT plan(13);

SELECT is((SELECT array_agg(taskforge.tf_backoff(n, 2, 300, 0) ORDER BY n) FROM generate_series(1, 12) n),
    ARRAY[2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300]::float8[], 'base 2, cap 300: 2, 4, 8, ... 256, then 300');
SELECT is(taskforge.tf_backoff(2147483647, 2, 300, 0), 300::float8, 'attempt 2^31-1 waits exactly the cap');
SELECT is((SELECT array_agg(taskforge.tf_backoff(n, 0.5, 1000, 0) ORDER BY n) FROM generate_series(1, 5) n),
    ARRAY[0.5, 1, 2, 4, 8]::float8[], 'base 0.5: 0.5, 1, 2, 4, 8');
SELECT is(taskforge.tf_backoff(9, 2, 256, 0), 256::float8, 'a delay equal to the cap is the cap');
SELECT is(taskforge.tf_backoff(1, 500, 300, 0), 300::float8, 'a base above the cap waits the cap');
SELECT is(taskforge.tf_backoff(1, 0.1, 0.1, 0), 0.1::float8, 'base = cap = 0.1: attempt 1 waits 0.1 s');
SELECT is(taskforge.tf_backoff(2147483647, 0.1, 0.1, 0), 0.1::float8, 'base = cap = 0.1: attempt 2^31-1 waits 0.1 s');

SELECT is((SELECT max(taskforge.tf_backoff(n, 0, 300, j)) FROM generate_series(1, 100) n, (VALUES (0::float8), (0.5), (1)) v(j)),
    0::float8, 'base 0 always gives 0');
SELECT is(taskforge.tf_backoff(2147483647, 0, 300, 1), 0::float8, 'base 0 at attempt 2^31-1 gives 0');
SELECT is((SELECT max(taskforge.tf_backoff(n, 2, 0, j)) FROM generate_series(1, 100) n, (VALUES (0::float8), (0.5), (1)) v(j)),
    0::float8, 'cap 0 always gives 0');
SELECT is(taskforge.tf_backoff(2147483647, 86400, 0, 1), 0::float8, 'cap 0 at attempt 2^31-1 gives 0');
SELECT ok((SELECT bool_and(taskforge.tf_backoff(1) BETWEEN 1.6 AND 2.4) FROM generate_series(1, 200)),
    'the defaults (base 2, cap 300, jitter 0.2) give 1.6 to 2.4 s after attempt 1');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
