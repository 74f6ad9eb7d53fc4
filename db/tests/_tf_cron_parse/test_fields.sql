-- _tf_cron_parse reads *, lists, ranges, steps, month and weekday names, 0 and 7 for Sunday, the macros, and applies the Vixie day rule only when neither day field starts with *.
BEGIN;
SELECT plan(22);
CREATE FUNCTION pg_temp.parsed(p_cron text) RETURNS text LANGUAGE sql AS $$
    SELECT format('%s|%s|%s|%s|%s|%s', p.minutes, p.hours, p.days, p.months, p.weekdays, p.day_or)
      FROM taskforge._tf_cron_parse(p_cron) p
$$;

SELECT is((SELECT cardinality(minutes) FROM taskforge._tf_cron_parse('* * * * *')), 60, '* in the minute field is 0..59');
SELECT is(pg_temp.parsed('* * * * *'),
          format('%s|%s|%s|{1,2,3,4,5,6,7,8,9,10,11,12}|{0,1,2,3,4,5,6}|f',
                 (SELECT array_agg(g) FROM generate_series(0, 59) g), (SELECT array_agg(g) FROM generate_series(0, 23) g), (SELECT array_agg(g) FROM generate_series(1, 31) g)),
          'every field at *: all values, weekdays 0-6, no either-matches rule');
SELECT is((SELECT minutes FROM taskforge._tf_cron_parse('5,0,59,5 * * * *')), '{0,5,59}'::int[], 'a list is sorted and without duplicates');
SELECT is((SELECT hours FROM taskforge._tf_cron_parse('0 9-12 * * *')), '{9,10,11,12}'::int[], 'a range includes both ends');
SELECT is((SELECT minutes FROM taskforge._tf_cron_parse('*/15 * * * *')), '{0,15,30,45}'::int[], '*/15 steps from the first value');
SELECT is((SELECT days FROM taskforge._tf_cron_parse('0 0 */10 * *')), '{1,11,21,31}'::int[], '*/10 in day-of-month starts at 1');
SELECT is((SELECT minutes FROM taskforge._tf_cron_parse('10-30/7 * * * *')), '{10,17,24}'::int[], 'a-b/n steps within the range');
SELECT is((SELECT minutes FROM taskforge._tf_cron_parse('*/60 * * * *')), '{0}'::int[], 'a step as long as the field gives its first value');
SELECT is((SELECT hours FROM taskforge._tf_cron_parse('0 1,5-7,20-23/2 * * *')), '{1,5,6,7,20,22}'::int[], 'a list mixes values, ranges and steps');
SELECT is((SELECT months FROM taskforge._tf_cron_parse('0 0 1 jan,Mar-MAY,DEC *')), '{1,3,4,5,12}'::int[], 'month names, any case, also in ranges');
SELECT is((SELECT weekdays FROM taskforge._tf_cron_parse('0 0 * * MON-FRI')), '{1,2,3,4,5}'::int[], 'weekday names in a range');
SELECT is((SELECT weekdays FROM taskforge._tf_cron_parse('0 0 * * 7')), '{0}'::int[], '7 is Sunday');
SELECT is((SELECT weekdays FROM taskforge._tf_cron_parse('0 0 * * 0,7,sun')), '{0}'::int[], '0, 7 and SUN are one Sunday');
SELECT is((SELECT weekdays FROM taskforge._tf_cron_parse('0 0 * * 5-7')), '{0,5,6}'::int[], 'a range up to 7 ends on Sunday');
SELECT is((SELECT day_or FROM taskforge._tf_cron_parse('0 0 1 * MON')), true, 'both day fields restricted: a day matches either');
SELECT is((SELECT day_or FROM taskforge._tf_cron_parse('0 0 * * MON')), false, 'day-of-month * : the weekday alone decides');
SELECT is((SELECT day_or FROM taskforge._tf_cron_parse('0 0 */2 * MON')), false, 'a day field starting with * (*/2) restricts together with the other (Vixie)');
SELECT is((SELECT day_or FROM taskforge._tf_cron_parse('0 0 1-31 * 0-6')), true, 'full ranges that do not start with * still use the either rule');
SELECT is(pg_temp.parsed(E'  0\t12   1 *  *  '), pg_temp.parsed('0 12 1 * *'), 'fields are separated by any run of spaces and tabs');
SELECT is(pg_temp.parsed('@daily'), pg_temp.parsed('0 0 * * *'), '@daily is 0 0 * * *');
SELECT ok(pg_temp.parsed('@HOURLY') = pg_temp.parsed('0 * * * *') AND pg_temp.parsed('@weekly') = pg_temp.parsed('0 0 * * 0')
          AND pg_temp.parsed('@monthly') = pg_temp.parsed('0 0 1 * *') AND pg_temp.parsed('@yearly') = pg_temp.parsed('0 0 1 1 *')
          AND pg_temp.parsed('@annually') = pg_temp.parsed('@yearly') AND pg_temp.parsed('@midnight') = pg_temp.parsed('@daily'),
          '@hourly, @weekly, @monthly, @yearly, @annually and @midnight (any case)');
SELECT is((SELECT days FROM taskforge._tf_cron_parse('0 0 29 2 *')), '{29}'::int[], '29 February is a valid day (leap years)');
SELECT * FROM finish();
ROLLBACK;
