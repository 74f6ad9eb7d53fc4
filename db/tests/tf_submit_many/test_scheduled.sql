-- tf_submit_many stores a scheduled_at string with a UTC offset as the same instant whatever the session TimeZone, and fingerprints it like tf_submit.
BEGIN;
SELECT plan(5);
SET LOCAL timezone = 'America/New_York';
CREATE TEMP TABLE s AS
    SELECT row_number() OVER () AS n, r.*
      FROM taskforge.tf_submit_many($$[
          {"task_type": "noop", "queue": "q_many_sched", "scheduled_at": "2030-01-01T12:00:00+05:00"},
          {"task_type": "noop", "queue": "q_many_sched", "scheduled_at": "2030-01-01 07:00:00.5Z"},
          {"task_type": "noop", "queue": "q_many_sched", "scheduled_at": "2001-02-03T04:05:06-0130", "idempotency_key": "k_many_sched"}
      ]$$) r;
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN s USING (task_id) WHERE n = 1), '2030-01-01 07:00:00+00'::timestamptz,
    'an offset +05:00 is stored as the same instant');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN s USING (task_id) WHERE n = 2), '2030-01-01 07:00:00.5+00'::timestamptz,
    'Z with fractional seconds is UTC');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN s USING (task_id) WHERE n = 3), '2001-02-03 05:35:06+00'::timestamptz,
    'an offset -0130 is stored as the same instant');
SET LOCAL timezone = 'Asia/Tokyo';
SELECT is((SELECT (task_id, created)::text FROM taskforge.tf_submit('noop', '{}', 'q_many_sched', 0, 3, '2001-02-03 05:35:06+00', 'k_many_sched')),
    (SELECT (task_id, false)::text FROM s WHERE n = 3), 'tf_submit with the same instant in another session TimeZone is a replay');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
