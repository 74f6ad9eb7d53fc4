-- tf_submit's appended traceparent: a W3C trace context header value or NULL, validated (TF400 naming traceparent, nothing written), stored, outside the fingerprint, shown by tf_tasks, and returned as the last column of every claim (tf_claim, tf_finalize_and_claim; NULL on finalized rows and for tasks without one).
BEGIN;
SELECT plan(25);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_submit_traceparent', queues => ARRAY['q_tp']) AS id;
CREATE TEMP TABLE tp AS SELECT '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'::text AS v;

-- Refused values: TF400, the argument in the message and the COLUMN field.
CREATE FUNCTION pg_temp.refused(p_value text, p_description text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_message text; v_column text;
BEGIN
    BEGIN
        PERFORM taskforge.tf_submit('noop', '{}', 'q_tp_refused', traceparent => p_value);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
    END;
    RETURN ok(v_state = 'TF400' AND v_column = 'traceparent' AND starts_with(v_message, 'traceparent: must be a W3C trace context traceparent'),
              p_description) || coalesce(E'\n' || diag(v_state || ' ' || v_column || ' ' || v_message), '');
END;
$helper$;
CREATE TEMP TABLE n_before AS SELECT count(*) AS n FROM taskforge.tasks;
SELECT pg_temp.refused('', 'an empty string is TF400');
SELECT pg_temp.refused('00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01', 'upper-case hex is TF400');
SELECT pg_temp.refused('ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'version ff is TF400');
SELECT pg_temp.refused('00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'an all-zero trace id is TF400');
SELECT pg_temp.refused('00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', 'an all-zero parent id is TF400');
SELECT pg_temp.refused('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', 'no flags is TF400');
SELECT pg_temp.refused('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x', 'a fifth field is TF400');
SELECT pg_temp.refused('00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01', 'a 31-digit trace id is TF400');
SELECT pg_temp.refused('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bg-01', 'a non-hex digit is TF400');
SELECT pg_temp.refused(' 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'surrounding white space is TF400');
SELECT pg_temp.refused('00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01', 'other separators are TF400');
SELECT is((SELECT count(*) FROM taskforge.tasks), (SELECT n FROM n_before), 'no refused call wrote a task');
SELECT throws_ok($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}, {"task_type": "noop", "traceparent": "00-00"}]')$$,
    'TF400', NULL, 'tf_submit_many refuses it too');

-- Accepted values.
SELECT is(taskforge._tf_traceparent_ok('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00'), true, 'another version and flags 00 are valid');
SELECT is(taskforge._tf_traceparent_ok(NULL), NULL, 'NULL is neither (tf_submit: none)');
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{"n": 1}', 'q_tp', priority => 5, traceparent => (SELECT v FROM tp));
CREATE TEMP TABLE s_none AS SELECT * FROM taskforge.tf_submit('noop', '{"n": 2}', 'q_tp', priority => 4);
SELECT is((SELECT traceparent::text FROM taskforge.tasks JOIN s USING (task_id)), (SELECT v FROM tp), 'stored');
SELECT is((SELECT traceparent FROM taskforge.tf_tasks WHERE task_id = (SELECT task_id FROM s)), (SELECT v FROM tp), 'shown by tf_tasks');

-- Not part of the fingerprint.
CREATE TEMP TABLE k AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_tp_key', idempotency_key => 'tp-k1', traceparent => (SELECT v FROM tp));
SELECT results_eq($$SELECT task_id, created FROM taskforge.tf_submit('noop', '{}', 'q_tp_key', idempotency_key => 'tp-k1',
                        traceparent => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')$$,
    $$SELECT task_id, false FROM k$$, 'a replay with another trace context is the stored task, not TF409');
SELECT is((SELECT traceparent::text FROM taskforge.tasks JOIN k USING (task_id)), (SELECT v FROM tp), 'whose trace context stands');

-- Returned by the claims, as their last column.
SELECT is((SELECT (proargnames)[array_upper(proargnames, 1)] FROM pg_catalog.pg_proc
            WHERE oid = 'taskforge.tf_claim(uuid, text[], double precision, numeric, text[])'::regprocedure), 'traceparent',
    'traceparent is the last column of tf_claim');
SELECT is((SELECT (proargnames)[array_upper(proargnames, 1)] FROM pg_catalog.pg_proc
            WHERE oid = 'taskforge.tf_finalize_and_claim(uuid, numeric[], numeric[], text[], jsonb[], jsonb[], text[], double precision, numeric, text[])'::regprocedure),
    'traceparent', 'and of tf_finalize_and_claim');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_tp'], max_tasks => 1);
SELECT results_eq($$SELECT task_id, traceparent FROM c$$, $$SELECT task_id, v FROM s, tp$$, 'tf_claim returns the task''s trace context');
CREATE TEMP TABLE fc AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM c)], ARRAY[1],
    ARRAY['succeeded'], queues => ARRAY['q_tp'], max_tasks => 1);
SELECT results_eq($$SELECT kind, task_id, traceparent FROM fc ORDER BY kind DESC$$,
    $$VALUES ('finalized'::text, (SELECT task_id FROM s), NULL::text), ('claimed', (SELECT task_id FROM s_none), NULL)$$,
    'tf_finalize_and_claim: NULL on finalized rows and for a task submitted without one');
INSERT INTO s SELECT * FROM taskforge.tf_submit('noop', '{"n": 3}', 'q_tp', traceparent => (SELECT v FROM tp));
CREATE TEMP TABLE fc2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM s_none)], ARRAY[1],
    ARRAY['succeeded'], queues => ARRAY['q_tp'], max_tasks => 1);
SELECT is((SELECT traceparent FROM fc2 WHERE kind = 'claimed'), (SELECT v FROM tp), 'tf_finalize_and_claim returns a claimed task''s trace context');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
