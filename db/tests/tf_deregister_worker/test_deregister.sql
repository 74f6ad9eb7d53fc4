-- tf_deregister_worker sets stopped_at once, keeps the row, leaves owned tasks to their leases, and stops the worker from claiming or beating.
BEGIN;
SELECT plan(14);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_deregister') AS id;
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_deregister');
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_deregister');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deregister'], 60);
CREATE TEMP TABLE task_before AS SELECT t.* FROM taskforge.tasks t JOIN c USING (task_id);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
SELECT lives_ok($$SELECT taskforge.tf_deregister_worker((SELECT id FROM w))$$, 'deregister the worker');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.workers WHERE worker_id = (SELECT id FROM w);
SELECT is((SELECT count(*)::int FROM r1), 1, 'the worker row is kept');
SELECT ok((SELECT stopped_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) FROM r1), 'stopped_at is the database time of the call');
SELECT ok((SELECT stopped_at >= last_heartbeat_at FROM r1), 'stopped_at is not before the last heartbeat');

SELECT lives_ok($$SELECT taskforge.tf_deregister_worker((SELECT id FROM w))$$, 'deregistering twice is harmless');
SELECT is((SELECT stopped_at FROM taskforge.workers WHERE worker_id = (SELECT id FROM w)), (SELECT stopped_at FROM r1),
    'the second call keeps the first stopped_at');

SELECT is((SELECT t::text FROM taskforge.tasks t JOIN c USING (task_id)), (SELECT b::text FROM task_before b),
    'the task it owns is untouched (still RUNNING under its lease)');
SELECT is((SELECT a.state FROM taskforge.attempts a JOIN c USING (task_id)), 'RUNNING', 'its attempt is still RUNNING');

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_deregister'])$$, 'TF404', 'worker_id',
    'a deregistered worker cannot claim');
SELECT is((SELECT t.state FROM taskforge.tasks t JOIN s2 USING (task_id)), 'QUEUED', 'the other task stays QUEUED');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_heartbeat((SELECT id FROM w))$$, 'TF404', 'worker_id', 'a deregistered worker cannot heartbeat');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_deregister_worker(gen_random_uuid())$$, 'TF404', 'worker_id', 'an unknown worker is TF404');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_deregister_worker(NULL)$$, 'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
