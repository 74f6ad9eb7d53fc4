-- tf_schedule_periodic rejects every invalid argument with TF400 naming it (the request with exactly tf_submit's rules), writes nothing on error, and accepts the edge values.
BEGIN;
SELECT plan(26);
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

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic(NULL, '* * * * *', 'noop')$$, 'TF400', 'name', 'name NULL');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('', '* * * * *', 'noop')$$, 'TF400', 'name', 'an empty name');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('has space', '* * * * *', 'noop')$$, 'TF400', 'name', 'a space in the name');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('-dash-first', '* * * * *', 'noop')$$, 'TF400', 'name', 'a name starting with -');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic(rpad('sched', 64, 'x'), '* * * * *', 'noop')$$, 'TF400', 'name', 'a 64-character name');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', NULL, 'noop')$$, 'TF400', 'cron', 'cron NULL');
SELECT throws_ok($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '0 25 * * *', 'noop')$$, 'TF400',
                 'cron: hour field ''25'': 25 is out of range 0-23', 'a bad cron names the cron field');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * *', 'noop')$$, 'TF400', 'cron', 'four fields');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '0 0 31 2 *', 'noop')$$, 'TF400', 'cron', 'an expression that never fires');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', NULL)$$, 'TF400', 'task_type', 'task_type NULL');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'no_such_type')$$, 'TF400', 'task_type', 'an unregistered task type');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', NULL)$$, 'TF400', 'payload', 'payload NULL');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', '[1]')$$, 'TF400', 'payload', 'a payload that is not an object');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', jsonb_build_object('x', repeat('a', 1048576)))$$,
    'TF400', 'payload', 'a payload above 1 MiB');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', queue => 'bad queue')$$, 'TF400', 'queue', 'a bad queue');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', priority => 32768)$$, 'TF400', 'priority', 'priority above 32767');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', priority => NULL)$$, 'TF400', 'priority', 'priority NULL');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', max_attempts => 0)$$, 'TF400', 'max_attempts', 'max_attempts 0');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', max_attempts => 1001)$$, 'TF400', 'max_attempts', 'max_attempts above 1000');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', timezone => NULL)$$, 'TF400', 'timezone', 'timezone NULL');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', timezone => 'Mars/Olympus')$$, 'TF400', 'timezone', 'an unknown zone');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', timezone => 'europe/berlin')$$, 'TF400', 'timezone',
    'zone names are case-sensitive, as pg_timezone_names lists them');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic('sched-v', '* * * * *', 'noop', timezone => '+02')$$, 'TF400', 'timezone',
    'a POSIX offset is not a zone name');
SELECT is((SELECT count(*)::int FROM taskforge.periodic_schedules WHERE name LIKE 'sched%'), 0, 'no rejected call stored a schedule');
SELECT lives_ok($$SELECT * FROM taskforge.tf_schedule_periodic(rpad('Sched.edge_1:a-', 63, 'x'), '0 0 29 2 *', 'noop', '{}', rpad('q', 63, 'x'),
                                                           -32768, 1000, 'Pacific/Kiritimati')$$,
                'edge values: a 63-character name with . _ : -, 29 February, a 63-character queue, priority -32768, max_attempts 1000');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
