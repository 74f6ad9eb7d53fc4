-- tf_backoff's jitter spreads delays uniformly over [base*2^(n-1)*(1-j), base*2^(n-1)*(1+j)], capped.
BEGIN;
SELECT plan(12);

CREATE TEMP TABLE j20 AS SELECT taskforge.tf_backoff(1, 10, 300, 0.2) AS d FROM generate_series(1, 4000);
SELECT is((SELECT count(*)::int FROM j20 WHERE d < 8 OR d > 12), 0, 'jitter 0.2 around 10 s stays within [8, 12]');
SELECT ok((SELECT min(d) < 8.5 FROM j20), 'the low end of the range is reached (some sample below 8.5)');
SELECT ok((SELECT max(d) > 11.5 FROM j20), 'the high end of the range is reached (some sample above 11.5)');
SELECT ok((SELECT avg(d) BETWEEN 9.8 AND 10.2 FROM j20), 'the mean is about 10 s (symmetric jitter)');
SELECT ok((SELECT count(DISTINCT d) > 3000 FROM j20), 'the delays are spread, not a few repeated values');
SELECT ok((SELECT count(*) FILTER (WHERE d < 10) BETWEEN 1700 AND 2300 FROM j20), 'about half of the delays are below the base');

CREATE TEMP TABLE j50 AS SELECT taskforge.tf_backoff(4, 1, 300, 0.5) AS d FROM generate_series(1, 2000);
SELECT is((SELECT count(*)::int FROM j50 WHERE d < 4 OR d > 12), 0, 'attempt 4, base 1, jitter 0.5 stays within [4, 12]');

CREATE TEMP TABLE j100 AS SELECT taskforge.tf_backoff(2, 5, 300, 1) AS d FROM generate_series(1, 2000);
SELECT is((SELECT count(*)::int FROM j100 WHERE d < 0 OR d > 20), 0, 'jitter 1 stays within [0, 2 * base * 2^(n-1)]');
SELECT ok((SELECT min(d) < 1 AND max(d) > 19 FROM j100), 'jitter 1 covers almost the whole range');

CREATE TEMP TABLE jcap AS SELECT taskforge.tf_backoff(5, 10, 150, 0.2) AS d FROM generate_series(1, 2000);
SELECT is((SELECT count(*)::int FROM jcap WHERE d < 128 OR d > 150), 0, 'near the cap: within [160 * 0.8, 150]');
SELECT ok((SELECT count(*) FILTER (WHERE d = 150) BETWEEN 1 AND 1999 FROM jcap), 'some delays hit the cap, others stay below it');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
