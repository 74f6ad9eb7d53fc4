-- tf_submit's appended delay_seconds: the task is scheduled at the database clock at entry + the delay; validated (finite, 0..3155760000 s, at most one of scheduled_at and delay_seconds: TF400 naming delay_seconds, nothing written); the fingerprint covers the delay as given, so a replay later is the stored task (created = false), not TF409; tf_submit_many's requests take it too.
BEGIN;
SELECT plan(27);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_submit_delay', queues => ARRAY['q_delay_now']) AS id;

-- The schedule: clock_timestamp() at entry + the delay.
CREATE TEMP TABLE before_call AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE d AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_delay', delay_seconds => 90.5);
CREATE TEMP TABLE after_call AS SELECT clock_timestamp() AS at;
SELECT ok((SELECT t.scheduled_at BETWEEN (SELECT at FROM before_call) + interval '90.5 seconds'
                                     AND (SELECT at FROM after_call) + interval '90.5 seconds'
             FROM taskforge.tasks t JOIN d USING (task_id)),
    'scheduled_at is the database clock at the call + delay_seconds');
SELECT is((SELECT t.scheduled_at - t.created_at FROM taskforge.tasks t JOIN d USING (task_id)), interval '90.5 seconds',
    'exactly the delay after created_at (one clock reading)');
SELECT is((SELECT state FROM d), 'QUEUED', 'a delayed task is QUEUED');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_delay'])), 0, 'and not claimable before its time');
CREATE TEMP TABLE zero AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_delay_now', delay_seconds => 0);
SELECT is((SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_delay_now'])), (SELECT task_id FROM zero),
    'a delay of 0 is due at once');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_delay', delay_seconds => 3155760000)), true,
    '100 years of 365.25 days is the longest delay');

-- Idempotency: the delay as given is the request; the instant it yields is stored once.
CREATE TEMP TABLE k1 AS SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', idempotency_key => 'delay-k1', delay_seconds => 60);
CREATE TEMP TABLE k1_at AS SELECT scheduled_at FROM taskforge.tasks JOIN k1 USING (task_id);
SELECT pg_sleep(0.02);
CREATE TEMP TABLE k1_replay AS SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', idempotency_key => 'delay-k1', delay_seconds => 60);
SELECT results_eq($$SELECT task_id, created FROM k1_replay$$, $$SELECT task_id, false FROM k1$$,
    'a replay of a delayed submit, later, is the stored task with created = false (not TF409)');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN k1 USING (task_id)), (SELECT scheduled_at FROM k1_at),
    'the replay keeps the first scheduled_at');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE idempotency_key = 'delay-k1'), 1, 'one task holds the key');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', idempotency_key => 'delay-k1', delay_seconds => 61)$$,
    'TF409', NULL, 'another delay is another request (TF409)');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', idempotency_key => 'delay-k1')$$,
    'TF409', NULL, 'and so is no delay');
SELECT throws_ok(format($$SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', idempotency_key => 'delay-k1', scheduled_at => %L)$$,
                        (SELECT scheduled_at FROM k1_at)),
    'TF409', NULL, 'and so is the computed instant given as scheduled_at');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_delay', 0, 3, NULL, 'delay-k1', NULL, 60)), false,
    'a positional call with the same delay is a replay too');
SELECT is(taskforge._tf_fingerprint('noop', '{}', 'q', 0, 3, NULL, NULL, 5),
    sha256(convert_to(jsonb_build_array('tf1', 'noop', '{}'::jsonb, 'q', 0, 3, NULL::text, NULL::float8, 5::float8)::text, 'UTF8')),
    'a delay is the ninth element of the canonical form (after the timeout, here null)');

-- Validation: TF400 naming delay_seconds in the message and the COLUMN field; nothing written.
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_message text; v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
    END;
    RETURN v_state || ' ' || v_column || ' ' || v_message;
END;
$helper$;
CREATE TEMP TABLE n_before AS SELECT count(*) AS n FROM taskforge.tasks;
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', scheduled_at => now() + interval '1 hour', delay_seconds => 5)$$),
    'TF400 delay_seconds delay_seconds: give at most one of scheduled_at and delay_seconds', 'scheduled_at and delay_seconds together are TF400');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', scheduled_at => now(), delay_seconds => 0)$$),
    'TF400 delay_seconds delay_seconds: give at most one of scheduled_at and delay_seconds', 'whatever the values');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => -0.001)$$),
    'TF400 delay_seconds delay_seconds: must be at least 0 and at most 3155760000 seconds, got -0.001', 'a negative delay is TF400');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => 3155760000.001)$$),
    'TF400 delay_seconds delay_seconds: must be at least 0 and at most 3155760000 seconds, got 3155760000.001', 'over 100 years is TF400');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => 'NaN')$$),
    'TF400 delay_seconds delay_seconds: must be a finite number of seconds, got NaN', 'NaN is TF400');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => 'Infinity')$$),
    'TF400 delay_seconds delay_seconds: must be a finite number of seconds, got Infinity', 'Infinity is TF400');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => '-Infinity')$$),
    'TF400 delay_seconds delay_seconds: must be a finite number of seconds, got -Infinity', '-Infinity is TF400');
SELECT is((SELECT count(*) FROM taskforge.tasks), (SELECT n FROM n_before), 'no refused call wrote a task');

-- tf_submit_many: the same rules per element, one clock reading per call.
CREATE TEMP TABLE m AS SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_delay_many", "delay_seconds": 30},
    {"task_type": "noop", "queue": "q_delay_many", "delay_seconds": null}, {"task_type": "noop", "queue": "q_delay_many", "delay_seconds": 0.25}]');
SELECT is((SELECT array_agg(t.scheduled_at - t.created_at ORDER BY m.task_id) FROM m JOIN taskforge.tasks t USING (task_id)),
    ARRAY[interval '30 seconds', interval '0', interval '0.25 seconds'], 'tf_submit_many schedules each element at the call''s clock + its delay; null is none');
CREATE TEMP TABLE mk AS SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_delay_many", "idempotency_key": "delay-many-k", "delay_seconds": 30}]');
SELECT pg_sleep(0.02);
SELECT results_eq($$SELECT task_id, created FROM taskforge.tf_submit_many('[{"task_type": "noop", "queue": "q_delay_many", "idempotency_key": "delay-many-k", "delay_seconds": 30}]')$$,
    $$SELECT task_id, false FROM mk$$, 'a replayed batch element with the same delay is the stored task');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_delay_many', idempotency_key => 'delay-many-k', delay_seconds => 30)), false,
    'and tf_submit with the same delay is the same request');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}, {"task_type": "noop", "delay_seconds": 1, "scheduled_at": "2031-03-04T05:06:07Z"}]')$$),
    'TF400 requests[1].delay_seconds requests[1].delay_seconds: give at most one of scheduled_at and delay_seconds',
    'a batch element with both is TF400 naming requests[i].delay_seconds');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
