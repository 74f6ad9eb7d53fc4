-- A task type unknown to tf_submit becomes submittable, claimable and retried under its policy once tf_register_task_type has added it.
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

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('regtype.gate', '{}', 'q_regtype_gate')$$, 'TF400', 'task_type',
    'an unregistered type cannot be submitted');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_regtype_gate'), 0, 'nothing was stored');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.gate', 0.25, 0.25, 0, 'a gate test type')$$, 'register regtype.gate');
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('regtype.gate', '{"v": 1}', 'q_regtype_gate');
SELECT is((SELECT created FROM s), true, 'after registration the type can be submitted');
SELECT is((SELECT task_type FROM taskforge.tasks JOIN s USING (task_id)), 'regtype.gate', 'the task carries the new type');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_regtype_gate') AS id;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), NULL, task_types => ARRAY['regtype.gate']);
SELECT is((SELECT task_id FROM c), (SELECT task_id FROM s), 'a worker filtering on the new type claims it');
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM s), (SELECT id FROM w), 1, 'retryable');
SELECT is((SELECT t.scheduled_at - a.finished_at FROM taskforge.tasks t JOIN taskforge.attempts a USING (task_id)
            WHERE t.task_id = (SELECT task_id FROM s)), interval '0.25 seconds', 'its retry waits the registered 0.25 s');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
