-- _tf_cron_fire_at maps a matched wall-clock time to its instant: the one occurrence, the first of two (clocks go back), or the jump (clocks go forward), where timestamp AT TIME ZONE alone would pick the later occurrence and shift a gap time.
BEGIN;
SELECT plan(7);
SET LOCAL TimeZone = 'UTC';
SELECT is(taskforge._tf_cron_fire_at('2026-12-01 09:00', 'Europe/Berlin'), '2026-12-01 08:00+00'::timestamptz, 'an ordinary time: its one instant');
SELECT is(taskforge._tf_cron_fire_at('2026-12-01 09:00', 'UTC'), '2026-12-01 09:00+00'::timestamptz, 'UTC: the same wall clock');
SELECT is(taskforge._tf_cron_fire_at('2026-10-25 02:30', 'Europe/Berlin'), '2026-10-25 00:30+00'::timestamptz,
          'a repeated time: its first occurrence (CEST)');
SELECT isnt(taskforge._tf_cron_fire_at('2026-10-25 02:30', 'Europe/Berlin'), '2026-10-25 02:30'::timestamp AT TIME ZONE 'Europe/Berlin',
            'which is not what AT TIME ZONE picks (the later, CET)');
SELECT is(taskforge._tf_cron_fire_at('2026-03-29 02:30', 'Europe/Berlin'), '2026-03-29 01:00+00'::timestamptz,
          'a time in the gap: the jump, 03:00 CEST');
SELECT is(taskforge._tf_cron_fire_at('2026-03-08 02:00', 'America/New_York'), '2026-03-08 07:00+00'::timestamptz,
          'the first minute of the gap: the jump too');
SELECT is(taskforge._tf_cron_fire_at('2026-11-01 01:59', 'America/New_York'), '2026-11-01 05:59+00'::timestamptz,
          'the last repeated minute: its first occurrence (EDT)');
SELECT * FROM finish();
ROLLBACK;
