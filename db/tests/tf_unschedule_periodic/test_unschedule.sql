-- tf_unschedule_periodic deletes a schedule (true), answers false for a name it does not know, leaves enqueued tasks alone, and rejects a NULL or malformed name with TF400.
BEGIN;
SELECT plan(8);
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
DELETE FROM taskforge.periodic_schedules;
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_schedule_periodic('unsched-1', '* * * * *', 'noop', queue => 'q_unsched');
CREATE TEMP TABLE k AS SELECT * FROM taskforge.tf_schedule_periodic('unsched-2', '* * * * *', 'noop', queue => 'q_unsched');
UPDATE taskforge.periodic_schedules SET next_fire_at = clock_timestamp() - interval '30 seconds';
CREATE TEMP TABLE e AS SELECT * FROM taskforge.tf_enqueue_periodic();

SELECT is((SELECT enqueued FROM e), 2, 'setup: both schedules enqueued a task');
SELECT is(taskforge.tf_unschedule_periodic('unsched-1'), true, 'an existing schedule is deleted: true');
SELECT is((SELECT array_agg(name) FROM taskforge.periodic_schedules), ARRAY['unsched-2'], 'only that schedule is gone');
SELECT is(taskforge.tf_unschedule_periodic('unsched-1'), false, 'a second call finds nothing: false, not an error');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_unsched' AND state = 'QUEUED'), 2, 'the tasks it enqueued stay QUEUED');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_unschedule_periodic(NULL)$$, 'TF400', 'name', 'name NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_unschedule_periodic('not a name')$$, 'TF400', 'name', 'a malformed name is TF400');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
