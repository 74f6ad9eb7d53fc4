-- tf_finalize_and_claim with max_tasks > 0 needs a registered, not deregistered worker: otherwise TF404 naming worker_id, and nothing is written, not even the finalize part of the call.
BEGIN;
SELECT plan(10);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_worker') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fac_worker');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_worker'], 60);
CREATE TEMP TABLE waiting AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fac_worker');

-- Unknown worker.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim(gen_random_uuid(), '{}', '{}', '{}', queues => ARRAY['q_fac_worker'])$$,
    'TF404', 'worker_id', 'claim only, unknown worker: TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim(gen_random_uuid(), ARRAY[(SELECT task_id FROM s)], ARRAY[1], ARRAY['succeeded'],
                                                                          queues => ARRAY['q_fac_worker'], max_tasks => 1)$$,
    'TF404', 'worker_id', 'finalize and claim, unknown worker: TF404');

-- Deregistered worker that still owns a running attempt.
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t WHERE t.queue = 'q_fac_worker';
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN s USING (task_id);
SELECT lives_ok(format('SELECT taskforge.tf_deregister_worker(%L)', (SELECT id FROM w)), 'deregister the worker');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM s)], ARRAY[1], ARRAY['succeeded'],
                                                                          ARRAY['{"r": 1}'::jsonb], queues => ARRAY['q_fac_worker'], max_tasks => 1)$$,
    'TF404', 'worker_id', 'finalize and claim, deregistered worker: TF404');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_worker'], max_tasks => 5)$$,
    'TF404', 'worker_id', 'claim only, deregistered worker: TF404');
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t WHERE t.queue = 'q_fac_worker'),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x),
    'after TF404 nothing was written: the running task is not finalized and the waiting one is not claimed');
SELECT is((SELECT array_agg(a::text) FROM taskforge.attempts a JOIN s USING (task_id)), (SELECT array_agg(x::text) FROM snap_att x),
    'the attempt is still RUNNING, unchanged');

-- With max_tasks 0 the same deregistered worker finalizes.
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM s)], ARRAY[1], ARRAY['succeeded'],
                                                                      ARRAY['{"r": 1}'::jsonb], max_tasks => 0);
SELECT is((SELECT kind || '/' || accepted || '/' || task_state FROM f), 'finalized/true/SUCCEEDED', 'with max_tasks 0 the deregistered worker finalizes');

-- A live worker claims the waiting task.
CREATE TEMP TABLE w2 AS SELECT taskforge.tf_register_worker('w_fac_worker_2') AS id;
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w2), '{}', '{}', '{}', queues => ARRAY['q_fac_worker']);
SELECT is((SELECT task_id FROM c2), (SELECT task_id FROM waiting), 'a registered worker claims the waiting task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
