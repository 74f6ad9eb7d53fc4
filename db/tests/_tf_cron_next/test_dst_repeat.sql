-- DST fall back: a wall-clock time that happens twice fires once, at its first occurrence; a start inside the repeated hour does not fire the second occurrence (Europe/Berlin, America/New_York).
BEGIN;
SELECT plan(7);
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

-- Europe/Berlin, 2026-10-25: at 01:00 UTC the clocks go back from 03:00 CEST to 02:00 CET; 02:00-02:59 happens twice.
SELECT is(pg_temp.ticks('30 2 * * *', '2026-10-24 12:00+00', 'Europe/Berlin', 2),
          ARRAY['2026-10-25 00:30+00', '2026-10-26 01:30+00']::timestamptz[],
          'Berlin: 02:30 fires at 02:30 CEST (00:30 UTC) only, not again at 02:30 CET');
SELECT is(taskforge._tf_cron_next('30 2 * * *', '2026-10-25 01:10+00', 'Europe/Berlin'), '2026-10-26 01:30+00'::timestamptz,
          'Berlin: from inside the second 02:xx hour, today''s 02:30 is already past');
SELECT is(pg_temp.ticks('*/30 * * * *', '2026-10-24 23:40+00', 'Europe/Berlin', 3),
          ARRAY['2026-10-25 00:00+00', '2026-10-25 00:30+00', '2026-10-25 02:00+00']::timestamptz[],
          'Berlin: */30 fires 02:00 and 02:30 once; the repeated hour has no ticks of its own');
SELECT is(pg_temp.ticks('0 * * * *', '2026-10-24 23:30+00', 'Europe/Berlin', 3),
          ARRAY['2026-10-25 00:00+00', '2026-10-25 02:00+00', '2026-10-25 03:00+00']::timestamptz[],
          'Berlin: hourly skips the second 02:00');
SELECT is(taskforge._tf_cron_next('30 3 * * *', '2026-10-24 12:00+00', 'Europe/Berlin'), '2026-10-25 02:30+00'::timestamptz,
          'Berlin: 03:30, after the repeated hour, is in CET');
-- America/New_York, 2026-11-01: at 06:00 UTC the clocks go back from 02:00 EDT to 01:00 EST.
SELECT is(pg_temp.ticks('30 1 * * *', '2026-10-31 12:00+00', 'America/New_York', 2),
          ARRAY['2026-11-01 05:30+00', '2026-11-02 06:30+00']::timestamptz[],
          'New York: 01:30 fires at 01:30 EDT (05:30 UTC) only');
SELECT is(taskforge._tf_cron_next('0 2 * * *', '2026-10-31 12:00+00', 'America/New_York'), '2026-11-01 07:00+00'::timestamptz,
          'New York: 02:00 happens once (EST) and fires then');
SELECT * FROM finish();
ROLLBACK;
