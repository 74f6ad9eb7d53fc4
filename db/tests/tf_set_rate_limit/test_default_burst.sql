-- tf_set_rate_limit: without a burst the bucket holds ceil(per_second) tokens (at least 1), on a first limit and on a replacement.
BEGIN;
SELECT plan(6);

SELECT lives_ok($$SELECT taskforge.tf_set_rate_limit('rk_default_whole', 7)$$, 'set 7 per second without a burst');
SELECT lives_ok($$SELECT taskforge.tf_set_rate_limit('rk_default_frac', 2.5)$$, 'set 2.5 per second without a burst');
SELECT lives_ok($$SELECT taskforge.tf_set_rate_limit('rk_default_slow', 0.001)$$, 'set 0.001 per second without a burst');
SELECT lives_ok($$SELECT taskforge.tf_set_rate_limit('rk_default_max', 1000000)$$, 'set 1000000 per second without a burst');
SELECT results_eq($$SELECT rate_key::text, burst, tokens FROM taskforge.rate_limits
                     WHERE rate_key LIKE 'rk\_default\_%' ORDER BY rate_key$$,
                  $$VALUES ('rk_default_frac', 3, 3::double precision), ('rk_default_max', 1000000, 1000000),
                           ('rk_default_slow', 1, 1), ('rk_default_whole', 7, 7)$$,
                  'burst = ceil(per_second), at least 1, and the new bucket holds it');
-- A replacement without a burst takes the default of its own per_second, not the old burst.
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_default_whole', 11.2); END $$;
SELECT is((SELECT burst FROM taskforge.rate_limits WHERE rate_key = 'rk_default_whole'), 12,
          'replacing 7/s by 11.2/s without a burst gives burst 12');
SELECT * FROM finish();
ROLLBACK;
