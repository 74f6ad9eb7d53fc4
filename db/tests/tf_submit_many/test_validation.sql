-- tf_submit_many refuses a bad array or element with TF400 naming the element and argument (requests[i].argument, in the message and as the error's COLUMN field), with tf_submit's rules per element, and writes nothing.
BEGIN;
SELECT plan(53);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message that names the argument ("<argument>: <problem>") and the argument as its COLUMN
-- field (what a client reads instead of the message, e.g. psycopg's exc.diag.column_name).
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
    v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') AND v_column = p_argument THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ..." and COLUMN %s, got %s',
        p_sqlstate, p_argument, p_argument, coalesce(v_state || ' "' || v_message || '" COLUMN ' || coalesce(v_column, 'NULL'), 'no error')));
END;
$helper$;
-- v(json): a call of tf_submit_many with one bad element after a good one, as SQL text.
CREATE FUNCTION pg_temp.v(p_element text)
RETURNS text
LANGUAGE sql
AS $helper$
    SELECT format('SELECT * FROM taskforge.tf_submit_many(%L)',
                  '[{"task_type": "noop", "queue": "q_many_validation"}, ' || p_element || ']');
$helper$;

-- The array itself.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many(NULL)$$, 'TF400', 'requests', 'requests NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('{"task_type": "noop"}')$$, 'TF400', 'requests',
    'a JSON object instead of an array is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[]')$$, 'TF400', 'requests', 'an empty array is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many(
        (SELECT jsonb_agg(jsonb_build_object('task_type', 'noop', 'queue', 'q_many_validation')) FROM generate_series(1, 10001)))$$,
    'TF400', 'requests', '10001 requests are TF400');

-- The shape of an element.
SELECT pg_temp.throws_arg(pg_temp.v('"noop"'), 'TF400', 'requests[1]', 'a string element is TF400 naming it');
SELECT pg_temp.throws_arg(pg_temp.v('null'), 'TF400', 'requests[1]', 'a null element is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue_name": "x"}'), 'TF400', 'requests[1]', 'an unknown key is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay": 5}'), 'TF400', 'requests[1]',
    'delay is not a key of tf_submit (delay_seconds is): TF400');

-- task_type
SELECT pg_temp.throws_arg(pg_temp.v('{"queue": "q_many_validation"}'), 'TF400', 'requests[1].task_type', 'a missing task_type is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": null}'), 'TF400', 'requests[1].task_type', 'task_type null is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "no_such_type_many"}'), 'TF400', 'requests[1].task_type', 'an unknown task type is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": 1}'), 'TF400', 'requests[1].task_type', 'a number task_type is TF400');

-- payload
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "payload": null}'), 'TF400', 'requests[1].payload', 'payload null is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "payload": [1]}'), 'TF400', 'requests[1].payload', 'an array payload is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "payload": "x"}'), 'TF400', 'requests[1].payload', 'a string payload is TF400');
SELECT pg_temp.throws_arg(format('SELECT * FROM taskforge.tf_submit_many(%L)',
        jsonb_build_array(jsonb_build_object('task_type', 'noop', 'payload', jsonb_build_object('a', repeat('x', 1048568))))),
    'TF400', 'requests[0].payload', 'a payload of 1 MiB + 1 byte is TF400');

-- queue
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": null}'), 'TF400', 'requests[1].queue', 'queue null is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": ""}'), 'TF400', 'requests[1].queue', 'an empty queue is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": "q many"}'), 'TF400', 'requests[1].queue', 'a queue with a space is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "queue": ["q"]}'), 'TF400', 'requests[1].queue', 'an array queue is TF400');

-- priority and max_attempts
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": 32768}'), 'TF400', 'requests[1].priority', 'priority 32768 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": -32769}'), 'TF400', 'requests[1].priority', 'priority -32769 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": null}'), 'TF400', 'requests[1].priority', 'priority null is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": 1.5}'), 'TF400', 'requests[1].priority', 'priority 1.5 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": "5"}'), 'TF400', 'requests[1].priority', 'a string priority is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "priority": 1e30}'), 'TF400', 'requests[1].priority', 'priority 1e30 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "max_attempts": 0}'), 'TF400', 'requests[1].max_attempts', 'max_attempts 0 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "max_attempts": 1001}'), 'TF400', 'requests[1].max_attempts', 'max_attempts 1001 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "max_attempts": null}'), 'TF400', 'requests[1].max_attempts', 'max_attempts null is TF400');

-- scheduled_at
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "scheduled_at": "2031-03-04T05:06:07"}'), 'TF400', 'requests[1].scheduled_at',
    'a timestamp without a UTC offset is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "scheduled_at": "2031-03-04"}'), 'TF400', 'requests[1].scheduled_at',
    'a date without a time is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "scheduled_at": "2031-13-04T05:06:07Z"}'), 'TF400', 'requests[1].scheduled_at',
    'month 13 is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "scheduled_at": "infinity"}'), 'TF400', 'requests[1].scheduled_at',
    'infinity is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "scheduled_at": 1700000000}'), 'TF400', 'requests[1].scheduled_at',
    'a number schedule is TF400');

-- idempotency_key
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "idempotency_key": ""}'), 'TF400', 'requests[1].idempotency_key',
    'an empty idempotency_key is TF400');
SELECT pg_temp.throws_arg(format('SELECT * FROM taskforge.tf_submit_many(%L)',
        jsonb_build_array(jsonb_build_object('task_type', 'noop', 'idempotency_key', repeat('k', 201)))),
    'TF400', 'requests[0].idempotency_key', 'a 201-character idempotency_key is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "idempotency_key": 7}'), 'TF400', 'requests[1].idempotency_key',
    'a number idempotency_key is TF400');

-- delay_seconds, notify_finished, traceparent
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay_seconds": "5"}'), 'TF400', 'requests[1].delay_seconds',
    'a string delay_seconds is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay_seconds": -1}'), 'TF400', 'requests[1].delay_seconds',
    'a negative delay_seconds is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay_seconds": 3155760000.5}'), 'TF400', 'requests[1].delay_seconds',
    'a delay_seconds over 100 years is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay_seconds": 1e400}'), 'TF400', 'requests[1].delay_seconds',
    'a delay_seconds beyond double precision is TF400, not 22003');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "delay_seconds": 5, "scheduled_at": "2031-03-04T05:06:07Z"}'), 'TF400',
    'requests[1].delay_seconds', 'a delay_seconds with a scheduled_at is TF400 naming delay_seconds');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "notify_finished": null}'), 'TF400', 'requests[1].notify_finished',
    'notify_finished null is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "notify_finished": "true"}'), 'TF400', 'requests[1].notify_finished',
    'a string notify_finished is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "notify_finished": 1}'), 'TF400', 'requests[1].notify_finished',
    'a number notify_finished is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "traceparent": 1}'), 'TF400', 'requests[1].traceparent',
    'a number traceparent is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}'),
    'TF400', 'requests[1].traceparent', 'a traceparent without its flags is TF400');
SELECT pg_temp.throws_arg(pg_temp.v('{"task_type": "noop", "traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'),
    'TF400', 'requests[1].traceparent', 'a traceparent of version ff is TF400');

-- The edges that are valid, in one call of 10000 requests.
SELECT is((SELECT count(*)::int FROM taskforge.tf_submit_many(
        (SELECT jsonb_agg(jsonb_build_object('task_type', 'noop', 'queue', 'q_many_validation_max', 'priority', 32767,
                                             'max_attempts', 1000, 'scheduled_at', '2031-03-04 05:06:07+02')) FROM generate_series(1, 10000))) WHERE created),
    10000, '10000 requests at the edges of priority and max_attempts are accepted');
SELECT is((SELECT created FROM taskforge.tf_submit_many(jsonb_build_array(jsonb_build_object(
        'task_type', 'noop', 'queue', 'q_many_validation_edge', 'priority', -32768, 'max_attempts', 1.0,
        'payload', jsonb_build_object('a', repeat('x', 1048567)), 'idempotency_key', repeat('k', 200))))),
    true, 'a 1 MiB payload, a 200-character key, priority -32768 and max_attempts 1.0 are accepted');

-- Nothing was written by a rejected call, not even the good first element.
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_many_validation'), 0,
    'no rejected call wrote a task');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'default' AND created_at >= transaction_timestamp()), 0,
    'no rejected call wrote a task in the default queue');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
