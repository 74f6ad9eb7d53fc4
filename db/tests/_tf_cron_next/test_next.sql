-- _tf_cron_next gives the first tick strictly after an instant: minutes, hours, month and year roll-over, 29 February, the Vixie day rule, time zones without DST.
BEGIN;
SELECT plan(16);
SET LOCAL TimeZone = 'UTC';
-- ticks(cron, after, zone, n): the next n ticks, each strictly after the one before.
CREATE FUNCTION pg_temp.ticks(p_cron text, p_after timestamptz, p_zone text, p_n int) RETURNS timestamptz[]
LANGUAGE plpgsql AS $$
DECLARE
    v_out timestamptz[] := '{}';
    v_t timestamptz := p_after;
BEGIN
    FOR i IN 1..p_n LOOP
        v_t := taskforge._tf_cron_next(p_cron, v_t, p_zone);
        v_out := v_out || v_t;
    END LOOP;
    RETURN v_out;
END;
$$;

SELECT is(taskforge._tf_cron_next('* * * * *', '2026-12-01 10:00:00+00', 'UTC'), '2026-12-01 10:01:00+00'::timestamptz,
          'strictly after: a tick is never returned for the instant itself');
SELECT is(taskforge._tf_cron_next('* * * * *', '2026-12-01 10:00:59.999999+00', 'UTC'), '2026-12-01 10:01:00+00'::timestamptz,
          'ticks are whole minutes; the seconds of the start do not matter');
SELECT is(pg_temp.ticks('*/20 * * * *', '2026-12-01 10:50:00+00', 'UTC', 3),
          ARRAY['2026-12-01 11:00+00', '2026-12-01 11:20+00', '2026-12-01 11:40+00']::timestamptz[], 'minute steps cross the hour');
SELECT is(pg_temp.ticks('0 9-10 * * *', '2026-12-31 09:30:00+00', 'UTC', 3),
          ARRAY['2026-12-31 10:00+00', '2027-01-01 09:00+00', '2027-01-01 10:00+00']::timestamptz[], 'hours cross the day and the year');
SELECT is(pg_temp.ticks('0 0 31 * *', '2026-01-31 00:00:00+00', 'UTC', 3),
          ARRAY['2026-03-31 00:00+00', '2026-05-31 00:00+00', '2026-07-31 00:00+00']::timestamptz[], 'the 31st skips the months without one');
SELECT is(pg_temp.ticks('0 0 29 2 *', '2026-01-01 00:00:00+00', 'UTC', 3),
          ARRAY['2028-02-29 00:00+00', '2032-02-29 00:00+00', '2036-02-29 00:00+00']::timestamptz[], '29 February: leap years only');
SELECT is(taskforge._tf_cron_next('0 0 29 2 *', '2096-03-01 00:00:00+00', 'UTC'), '2104-02-29 00:00+00'::timestamptz,
          '2100 is not a leap year: eight years between two ticks');
SELECT is(pg_temp.ticks('0 0 1 1 *', '2026-06-15 00:00:00+00', 'UTC', 2),
          ARRAY['2027-01-01 00:00+00', '2028-01-01 00:00+00']::timestamptz[], 'yearly');
-- 2026-12-01 is a Tuesday.
SELECT is(pg_temp.ticks('0 0 1 * MON', '2026-11-30 12:00:00+00', 'UTC', 4),
          ARRAY['2026-12-01 00:00+00', '2026-12-07 00:00+00', '2026-12-14 00:00+00', '2026-12-21 00:00+00']::timestamptz[],
          'both day fields restricted: the 1st OR a Monday');
SELECT is(pg_temp.ticks('0 0 */2 * MON', '2026-11-30 12:00:00+00', 'UTC', 3),
          ARRAY['2026-12-07 00:00+00', '2026-12-21 00:00+00', '2027-01-11 00:00+00']::timestamptz[],
          'a day-of-month starting with * restricts together with the weekday: odd days that are Mondays');
SELECT is(pg_temp.ticks('30 8 * * SAT,SUN', '2026-12-01 00:00:00+00', 'UTC', 3),
          ARRAY['2026-12-05 08:30+00', '2026-12-06 08:30+00', '2026-12-12 08:30+00']::timestamptz[], 'weekends only');
SELECT is(pg_temp.ticks('0 12 * * 7', '2026-12-01 00:00:00+00', 'UTC', 1), pg_temp.ticks('0 12 * * 0', '2026-12-01 00:00:00+00', 'UTC', 1),
          '7 and 0 are the same Sunday');
SELECT is(pg_temp.ticks('0 9 * * *', '2026-12-01 00:00:00+00', 'Asia/Kolkata', 2),
          ARRAY['2026-12-01 03:30+00', '2026-12-02 03:30+00']::timestamptz[], 'read on the wall clock of the zone: 09:00 in Kolkata (+05:30)');
SELECT is(taskforge._tf_cron_next('0 0 * * *', '2026-12-01 12:00:00+00', 'Pacific/Kiritimati'), '2026-12-02 10:00+00'::timestamptz,
          'a zone 14 hours ahead (02:00 on 2 December there): its next midnight');
SELECT is(taskforge._tf_cron_next('0 0 * * *', '2026-12-01 12:00:00+00', 'Pacific/Pago_Pago'), '2026-12-02 11:00+00'::timestamptz,
          'a zone 11 hours behind: its next midnight');
SELECT throws_ok($$SELECT taskforge._tf_cron_next('61 * * * *', now(), 'UTC')$$, 'TF400', 'cron: minute field ''61'': 61 is out of range 0-59',
                 'an invalid expression is TF400');
SELECT * FROM finish();
ROLLBACK;
