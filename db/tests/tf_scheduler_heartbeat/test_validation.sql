-- tf_scheduler_heartbeat rejects each bad argument with TF400 naming it, and records nothing.
BEGIN;
SELECT plan(18);
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

CREATE TEMP TABLE before AS SELECT count(*) AS n FROM taskforge.schedulers;
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(NULL, 'sched-val')$$, 'TF400', 'scheduler_id', 'scheduler_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), NULL)$$, 'TF400', 'name', 'name NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), '')$$, 'TF400', 'name', 'an empty name is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), rpad('s', 201, 'x'))$$, 'TF400', 'name', 'a 201-character name is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', hostname => rpad('h', 256, 'x'))$$,
                          'TF400', 'hostname', 'a 256-character hostname is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', pid => 0)$$, 'TF400', 'pid', 'pid 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', pid => -5)$$, 'TF400', 'pid', 'a negative pid is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 0)$$,
                          'TF400', 'heartbeat_seconds', 'heartbeat_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 3600.5)$$,
                          'TF400', 'heartbeat_seconds', 'heartbeat_seconds above 3600 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 'NaN')$$,
                          'TF400', 'heartbeat_seconds', 'heartbeat_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 'Infinity')$$,
                          'TF400', 'heartbeat_seconds', 'heartbeat_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => NULL)$$,
                          'TF400', 'heartbeat_seconds', 'heartbeat_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', stopping => NULL)$$,
                          'TF400', 'stopping', 'stopping NULL is TF400');
SELECT is((SELECT count(*) FROM taskforge.schedulers), (SELECT n FROM before), 'no rejected call recorded a scheduler');

SELECT lives_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), rpad('s', 200, 'x'), hostname => rpad('h', 255, 'x'), pid => 1)$$,
                'a 200-character name, a 255-character hostname and pid 1 are accepted');
SELECT lives_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 3600)$$, 'heartbeat_seconds 3600 is accepted');
SELECT lives_ok($$SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'sched-val', heartbeat_seconds => 0.01)$$, 'heartbeat_seconds 0.01 is accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
