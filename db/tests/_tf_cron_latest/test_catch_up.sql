-- _tf_cron_latest (the catch-up rule): from an unfired tick, the latest tick at or before now; the tick itself when no later one passed; bounded work over a year of missed minutes.
BEGIN;
SELECT plan(7);
SET LOCAL TimeZone = 'UTC';
SELECT is(taskforge._tf_cron_latest('* * * * *', '2026-12-01 10:00+00', '2026-12-01 10:00:30+00', 'UTC'), '2026-12-01 10:00+00'::timestamptz,
          'no later tick passed: the due tick itself');
SELECT is(taskforge._tf_cron_latest('* * * * *', '2026-12-01 10:00+00', '2026-12-01 10:00+00', 'UTC'), '2026-12-01 10:00+00'::timestamptz,
          'due exactly now: the due tick');
SELECT is(taskforge._tf_cron_latest('* * * * *', '2026-12-01 10:00+00', '2026-12-01 10:07:30+00', 'UTC'), '2026-12-01 10:07+00'::timestamptz,
          'seven minutes missed: only the latest (10:07)');
SELECT is(taskforge._tf_cron_latest('*/5 * * * *', '2025-12-01 10:00+00', '2026-12-01 10:04:59+00', 'UTC'), '2026-12-01 10:00+00'::timestamptz,
          'a year of missed ticks: the latest one');
SELECT is(taskforge._tf_cron_latest('0 9 * * MON-FRI', '2026-11-27 09:00+00', '2026-12-01 08:00+00', 'UTC'), '2026-11-30 09:00+00'::timestamptz,
          'over a weekend: the latest weekday tick before now');
SELECT is(taskforge._tf_cron_latest('30 2 * * *', '2026-03-27 01:30+00', '2026-03-29 12:00+00', 'Europe/Berlin'), '2026-03-29 01:00+00'::timestamptz,
          'in a zone: the latest tick may be a DST jump');
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT taskforge._tf_cron_latest('* * * * *', '2025-12-01 10:00+00', '2026-12-01 10:00:30+00', 'UTC') = '2026-12-01 10:00+00'
           AND clock_timestamp() - (SELECT at FROM t0) < interval '2 seconds'),
          'a year of minutes (525,600 ticks) is bisected, not walked: well under 2 seconds');
SELECT * FROM finish();
ROLLBACK;
