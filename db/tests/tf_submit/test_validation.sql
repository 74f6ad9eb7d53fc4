-- tf_submit rejects every invalid argument with TF400 naming it, accepts the edge values, and writes nothing on error.
BEGIN;
SELECT plan(42);
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

-- task_type
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(NULL, queue => 'q_submit_validation')$$,
    'TF400', 'task_type', 'task_type NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('no_such_type_q_submit_validation', queue => 'q_submit_validation')$$,
    'TF400', 'task_type', 'an unknown task_type is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('NOOP', queue => 'q_submit_validation')$$,
    'TF400', 'task_type', 'task types are case-sensitive: NOOP is unknown');

-- payload
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', NULL, 'q_submit_validation')$$,
    'TF400', 'payload', 'payload NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', 'null', 'q_submit_validation')$$,
    'TF400', 'payload', 'payload JSON null is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '"text"', 'q_submit_validation')$$,
    'TF400', 'payload', 'a JSON string payload is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '[{"a": 1}]', 'q_submit_validation')$$,
    'TF400', 'payload', 'a JSON array payload is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '42', 'q_submit_validation')$$,
    'TF400', 'payload', 'a JSON number payload is TF400');
-- {"a": "<n x>"} is 9 + n bytes as jsonb text: n = 1048568 is one byte over 1 MiB.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', jsonb_build_object('a', repeat('x', 1048568)), 'q_submit_validation')$$,
    'TF400', 'payload', 'a payload of 1 MiB + 1 byte is TF400');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', jsonb_build_object('a', repeat('x', 1048567)), 'q_submit_validation')),
    true, 'a payload of exactly 1 MiB is accepted');

-- queue
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', NULL)$$,
    'TF400', 'queue', 'queue NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', '')$$,
    'TF400', 'queue', 'an empty queue name is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', '-q_submit_validation')$$,
    'TF400', 'queue', 'a queue name starting with - is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q submit validation')$$,
    'TF400', 'queue', 'a queue name with spaces is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation/x')$$,
    'TF400', 'queue', 'a queue name with / is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validatión')$$,
    'TF400', 'queue', 'a queue name with a non-ASCII letter is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', rpad('q_submit_validation_long', 64, 'x'))$$,
    'TF400', 'queue', 'a 64-character queue name is TF400');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', rpad('q_submit_validation_long', 63, 'x'))),
    true, 'a 63-character queue name is accepted');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'Q9.submit_validation:x-y')),
    true, 'a queue name with upper case, digits and . : - _ is accepted');

-- priority
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', -32769)$$,
    'TF400', 'priority', 'priority -32769 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 32768)$$,
    'TF400', 'priority', 'priority 32768 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', NULL)$$,
    'TF400', 'priority', 'priority NULL is TF400');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', -32768)),
    true, 'priority -32768 is accepted');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 32767)),
    true, 'priority 32767 is accepted');

-- max_attempts
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, 0)$$,
    'TF400', 'max_attempts', 'max_attempts 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, -1)$$,
    'TF400', 'max_attempts', 'max_attempts -1 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, 1001)$$,
    'TF400', 'max_attempts', 'max_attempts 1001 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, NULL)$$,
    'TF400', 'max_attempts', 'max_attempts NULL is TF400');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, 1)),
    true, 'max_attempts 1 is accepted');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', 0, 1000)),
    true, 'max_attempts 1000 is accepted');

-- scheduled_at
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', scheduled_at => 'infinity')$$,
    'TF400', 'scheduled_at', 'scheduled_at infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', scheduled_at => '-infinity')$$,
    'TF400', 'scheduled_at', 'scheduled_at -infinity is TF400');

-- idempotency_key
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', idempotency_key => '')$$,
    'TF400', 'idempotency_key', 'an empty idempotency_key is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', idempotency_key => rpad('k_submit_validation', 201, 'x'))$$,
    'TF400', 'idempotency_key', 'a 201-character idempotency_key is TF400');
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_submit_validation', idempotency_key => rpad('k_submit_validation', 200, 'x'))),
    true, 'a 200-character idempotency_key is accepted');

-- Named arguments are the API: a mistyped name does not resolve.
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit('noop', queue_name => 'q_submit_validation')$$,
    '42883', NULL, 'an unknown parameter name does not resolve to tf_submit');

-- Nothing was written by a rejected call.
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_validation'), 6,
    'only the six accepted submits in q_submit_validation wrote a task');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue LIKE 'q_submit_validation_long%'), 1,
    'only the 63-character queue got a task');
SELECT is((SELECT count(*)::int FROM taskforge.tasks
            WHERE queue IN ('', '-q_submit_validation', 'q submit validation', 'q_submit_validation/x', 'q_submit_validatión')),
    0, 'no task exists under a rejected queue name');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_validation' AND (priority NOT IN (0, -32768, 32767)
            OR max_attempts NOT IN (1, 3, 1000))), 0,
    'no task with a rejected priority or budget was stored');
SELECT is((SELECT count(*)::int FROM taskforge.attempts JOIN taskforge.tasks t USING (task_id)
            WHERE t.queue = 'q_submit_validation'), 0, 'submitting creates no attempt');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
