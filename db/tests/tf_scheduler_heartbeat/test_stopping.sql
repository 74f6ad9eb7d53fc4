-- tf_scheduler_heartbeat(stopping => true) marks the scheduler stopped at the database time; a stopped scheduler_id is refused with TF409 and nothing changes.
BEGIN;
SELECT plan(7);
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

CREATE TEMP TABLE ids AS SELECT gen_random_uuid() AS id;
DO $$ BEGIN PERFORM set_config('tftest.scheduler_id', (SELECT id FROM ids)::text, true); END $$;
CREATE TEMP TABLE hb1 AS SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM ids), 'sched-stop') AS at;
CREATE TEMP TABLE hb2 AS SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM ids), 'sched-stop', stopping => true) AS at;
SELECT results_eq($$SELECT last_heartbeat_at, stopped_at FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids)$$,
                  $$SELECT at, at FROM hb2$$,
                  'the stopping beat records last_heartbeat_at and stopped_at at the returned time');
SELECT ok((SELECT hb2.at > hb1.at FROM hb1, hb2), 'stopped after the last beat');

CREATE TEMP TABLE before AS SELECT * FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM ids);
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(current_setting('tftest.scheduler_id')::uuid, 'sched-stop')$$,
                          'TF409', 'scheduler_id', 'a beat for a stopped scheduler is TF409');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(current_setting('tftest.scheduler_id')::uuid, 'sched-stop', stopping => true)$$,
                          'TF409', 'scheduler_id', 'stopping a stopped scheduler again is TF409');
SELECT is((SELECT x::text FROM taskforge.schedulers x WHERE scheduler_id = (SELECT id FROM ids)), (SELECT b::text FROM before b),
          'the refused beats changed nothing');

-- A process that stops on its first call is recorded as started and stopped at once.
CREATE TEMP TABLE once AS SELECT gen_random_uuid() AS id;
CREATE TEMP TABLE hb3 AS SELECT taskforge.tf_scheduler_heartbeat((SELECT id FROM once), 'sched-once', stopping => true) AS at;
SELECT results_eq($$SELECT started_at, last_heartbeat_at, stopped_at FROM taskforge.schedulers WHERE scheduler_id = (SELECT id FROM once)$$,
                  $$SELECT at, at, at FROM hb3$$, 'a first beat with stopping => true records a start and a stop');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
