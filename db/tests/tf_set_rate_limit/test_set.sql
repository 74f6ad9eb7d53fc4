-- tf_set_rate_limit: set, replace and remove a rate key's limit; each call returns the limit before it (previous_per_second, previous_burst; NULLs when there was none) and leaves one row or none.
BEGIN;
SELECT plan(13);

SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_set', 10, 4)$$,
                  $$VALUES (NULL::double precision, NULL::int)$$, 'a first limit returns NULLs (there was none)');
SELECT results_eq($$SELECT per_second, burst FROM taskforge.rate_limits WHERE rate_key = 'rk_set'$$,
                  $$VALUES (10::double precision, 4)$$, 'the row holds per_second and burst');
SELECT results_eq($$SELECT rate_key, per_second, burst, queued FROM taskforge.tf_rate_limits WHERE rate_key = 'rk_set'$$,
                  $$VALUES ('rk_set'::text, 10::double precision, 4, 0::bigint)$$, 'tf_rate_limits shows it');

SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_set', 2.5, 8)$$,
                  $$VALUES (10::double precision, 4)$$, 'replacing returns the previous limit');
SELECT results_eq($$SELECT per_second, burst FROM taskforge.rate_limits WHERE rate_key = 'rk_set'$$,
                  $$VALUES (2.5::double precision, 8)$$, 'the replaced values are stored');
SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_set', 0.5)$$,
                  $$VALUES (2.5::double precision, 8)$$, 'replacing without a burst returns the previous limit too');
SELECT is((SELECT count(*)::int FROM taskforge.rate_limits WHERE rate_key = 'rk_set'), 1, 'still one row for the key');

SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_set', NULL)$$,
                  $$VALUES (0.5::double precision, 1)$$, 'removing returns the limit it removed');
SELECT is_empty($$SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_set'$$, 'removing deletes the row');
SELECT is_empty($$SELECT * FROM taskforge.tf_rate_limits WHERE rate_key = 'rk_set'$$, 'and the view no longer shows it');
SELECT results_eq($$SELECT previous_per_second, previous_burst FROM taskforge.tf_set_rate_limit('rk_set', NULL, NULL)$$,
                  $$VALUES (NULL::double precision, NULL::int)$$, 'removing a limit that is not there returns NULLs');
SELECT is_empty($$SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_set'$$, 'and writes nothing');

-- The bounds themselves are accepted.
SELECT results_eq($$SELECT previous_per_second, previous_burst
                      FROM taskforge.tf_set_rate_limit(repeat('k', 200), 1000000, 1000000)$$,
                  $$VALUES (NULL::double precision, NULL::int)$$,
                  'a 200-character key, per_second 1000000 and burst 1000000 are accepted');
SELECT * FROM finish();
ROLLBACK;
