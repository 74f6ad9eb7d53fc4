-- tf_submit with a used idempotency key and any difference in the request raises TF409 and writes nothing.
BEGIN;
SELECT plan(22);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message that names the argument ("<argument>: <problem>").
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ...", got %s',
        p_sqlstate, p_argument, coalesce(v_state || ' "' || v_message || '"', 'no error')));
END;
$helper$;

CREATE TEMP TABLE orig AS
    SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict');
CREATE TEMP TABLE before AS SELECT t.* FROM taskforge.tasks t JOIN orig USING (task_id);

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 2}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'another payload value is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": "1"}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'a payload value of another JSON type is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 1, "b": null}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'an extra payload member is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'a missing payload member is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{"a": 1}', 'q_submit_idem_conflict', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'another task_type is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_submit_idem_conflict2', 5, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'another queue is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_submit_idem_conflict', 6, 4, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'another priority is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_submit_idem_conflict', 5, 3, NULL, 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'another max_attempts is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_submit_idem_conflict', 5, 4, (SELECT created_at FROM before), 'k_submit_idem_conflict')$$,
    'TF409', 'idempotency_key', 'an explicit schedule (even the stored due time) differs from a NULL schedule: TF409');

SELECT is((SELECT t::text FROM taskforge.tasks t JOIN orig USING (task_id)), (SELECT b::text FROM before b),
    'the stored task is unchanged after the conflicts');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue IN ('q_submit_idem_conflict', 'q_submit_idem_conflict2')), 1,
    'no conflicting submit created a task');

-- A key first used with an explicit schedule.
CREATE TEMP TABLE sched AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_conflict', 0, 3, '2031-05-05 10:00:00+00', 'k_submit_idem_conflict_sched');
SELECT is((SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_conflict', 0, 3, '2031-05-05 10:00:00+00', 'k_submit_idem_conflict_sched')),
    (SELECT task_id FROM sched), 'the same explicit schedule is a replay');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_conflict', 0, 3, '2031-05-05 10:00:00.000001+00', 'k_submit_idem_conflict_sched')$$,
    'TF409', 'idempotency_key', 'a schedule one microsecond later is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_conflict', 0, 3, NULL, 'k_submit_idem_conflict_sched')$$,
    'TF409', 'idempotency_key', 'a NULL schedule differs from an explicit one: TF409');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN sched USING (task_id)), '2031-05-05 10:00:00+00'::timestamptz,
    'the stored schedule is unchanged');

-- Keys are compared exactly: another key is another task.
SELECT is((SELECT created FROM taskforge.tf_submit('echo', '{"a": 2}', 'q_submit_idem_conflict', 5, 4, NULL, 'K_SUBMIT_IDEM_CONFLICT')),
    true, 'a key differing only in case is a different key');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_idem_conflict'), 3,
    'exactly the three accepted new requests created tasks');

-- A key freed by a rolled-back submit can be used for another request.
-- The SQL linter (sqlfluff 4.5, postgres dialect) cannot parse SAVEPOINT statements: PRS is its parse error.
SAVEPOINT before_rollback;  -- noqa: PRS
CREATE TEMP TABLE rolled AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_conflict', 0, 3, NULL, 'k_submit_idem_conflict_rb');
ROLLBACK TO SAVEPOINT before_rollback;  -- noqa: PRS
CREATE TEMP TABLE after_rb AS SELECT * FROM taskforge.tf_submit('echo', '{"other": true}', 'q_submit_idem_conflict', 0, 3, NULL, 'k_submit_idem_conflict_rb');
SELECT is((SELECT created FROM after_rb), true, 'after a rolled-back submit the key is free for a different request');
SELECT is((SELECT payload::jsonb FROM taskforge.tasks JOIN after_rb USING (task_id)), '{"other": true}'::jsonb,
    'the task holding the key is the one committed later');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE idempotency_key = 'k_submit_idem_conflict_rb'), 1, 'one task holds that key');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE idempotency_key = 'k_submit_idem_conflict'), 1,
    'one task holds the original key');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
