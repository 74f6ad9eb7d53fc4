-- _tf_cron_field expands one field within its bounds, with names standing for values from min_value, and names the field in TF400.
BEGIN;
SELECT plan(6);
SELECT is(taskforge._tf_cron_field('hour', '*', 0, 23), (SELECT array_agg(g) FROM generate_series(0, 23) g), '* is every value');
SELECT is(taskforge._tf_cron_field('hour', '22,1-3,*/12', 0, 23), '{0,1,2,3,12,22}'::int[], 'a list of a value, a range and a step');
SELECT is(taskforge._tf_cron_field('month', 'feb-apr/2,Dec', 1, 12, ARRAY['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']),
          '{2,4,12}'::int[], 'names count from min_value (JAN = 1)');
SELECT is(taskforge._tf_cron_field('day-of-week', 'sun,SAT', 0, 7, ARRAY['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']),
          '{0,6}'::int[], 'names count from min_value (SUN = 0)');
SELECT throws_ok($$SELECT taskforge._tf_cron_field('hour', '', 0, 23)$$, 'TF400', 'cron: hour field '''': is empty', 'an empty field');
SELECT throws_ok($$SELECT taskforge._tf_cron_field('minute', '1-99', 0, 59)$$, 'TF400', 'cron: minute field ''1-99'': 99 is out of range 0-59',
                 'the message names the field, its text and the problem');
SELECT * FROM finish();
ROLLBACK;
