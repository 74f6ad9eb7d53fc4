-- DST spring forward: a wall-clock time that does not exist fires at the first instant after the gap (when the clocks jump), once for all ticks inside the gap (Europe/Berlin, America/New_York, Australia/Lord_Howe's 30-minute jump).
BEGIN;
SELECT plan(8);
SET LOCAL TimeZone = 'UTC';
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

-- Europe/Berlin, 2026-03-29: at 01:00 UTC the clocks go from 02:00 CET to 03:00 CEST; 02:00-02:59 does not exist.
SELECT is(pg_temp.ticks('30 2 * * *', '2026-03-28 12:00+00', 'Europe/Berlin', 3),
          ARRAY['2026-03-29 01:00+00', '2026-03-30 00:30+00', '2026-03-31 00:30+00']::timestamptz[],
          'Berlin: 02:30 on the day of the jump fires at 03:00 CEST (01:00 UTC), then at 02:30 CEST again');
SELECT is(taskforge._tf_cron_next('0 3 * * *', '2026-03-28 12:00+00', 'Europe/Berlin'), '2026-03-29 01:00+00'::timestamptz,
          'Berlin: 03:00, the first valid time, fires at that same instant');
SELECT is(pg_temp.ticks('*/15 * * * *', '2026-03-29 00:40+00', 'Europe/Berlin', 3),
          ARRAY['2026-03-29 00:45+00', '2026-03-29 01:00+00', '2026-03-29 01:15+00']::timestamptz[],
          'Berlin: 02:00, 02:15, 02:30, 02:45 and 03:00 fire once, together, at the jump');
SELECT is(pg_temp.ticks('0 * * * *', '2026-03-28 23:30+00', 'Europe/Berlin', 3),
          ARRAY['2026-03-29 00:00+00', '2026-03-29 01:00+00', '2026-03-29 02:00+00']::timestamptz[],
          'Berlin: hourly keeps one tick per real hour across the jump');
-- America/New_York, 2026-03-08: at 07:00 UTC the clocks go from 02:00 EST to 03:00 EDT.
SELECT is(pg_temp.ticks('30 2 * * *', '2026-03-07 12:00+00', 'America/New_York', 2),
          ARRAY['2026-03-08 07:00+00', '2026-03-09 06:30+00']::timestamptz[],
          'New York: 02:30 on the day of the jump fires at 03:00 EDT (07:00 UTC)');
SELECT is(taskforge._tf_cron_next('59 2 8 3 *', '2026-03-07 12:00+00', 'America/New_York'), '2026-03-08 07:00+00'::timestamptz,
          'New York: the last minute of the gap also fires at the jump');
-- Australia/Lord_Howe, 2026-10-04: at 15:30 UTC the clocks go from 02:00 (+10:30) to 02:30 (+11:00).
SELECT is(taskforge._tf_cron_next('15 2 * * *', '2026-10-03 00:00+00', 'Australia/Lord_Howe'), '2026-10-03 15:30+00'::timestamptz,
          'Lord Howe: a 30-minute gap; 02:15 fires at the jump');
SELECT is(taskforge._tf_cron_next('45 2 * * *', '2026-10-03 00:00+00', 'Australia/Lord_Howe'), '2026-10-03 15:45+00'::timestamptz,
          'Lord Howe: 02:45 exists and fires at 02:45 (+11:00)');
SELECT * FROM finish();
ROLLBACK;
