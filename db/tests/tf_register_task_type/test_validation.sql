-- tf_register_task_type rejects bad names and policies with TF400 naming the argument and writes nothing; edge values are accepted.
BEGIN;
SELECT plan(27);
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

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type(NULL)$$, 'TF400', 'task_type', 'task_type NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('')$$, 'TF400', 'task_type', 'an empty task_type is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('Regtype_val')$$, 'TF400', 'task_type', 'upper case is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('1regtype_val')$$, 'TF400', 'task_type', 'a leading digit is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype val')$$, 'TF400', 'task_type', 'a space is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype:val')$$, 'TF400', 'task_type', 'a colon is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type(rpad('regtype_val', 64, 'x'))$$, 'TF400', 'task_type', 'a 64-character name is TF400');

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', NULL)$$, 'TF400', 'backoff_base_seconds', 'base NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', -1)$$, 'TF400', 'backoff_base_seconds', 'a negative base is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 'NaN')$$, 'TF400', 'backoff_base_seconds', 'base NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 'Infinity')$$, 'TF400', 'backoff_base_seconds', 'base Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 86401)$$, 'TF400', 'backoff_base_seconds', 'base above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, NULL)$$, 'TF400', 'backoff_cap_seconds', 'cap NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, -0.5)$$, 'TF400', 'backoff_cap_seconds', 'a negative cap is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, '-Infinity')$$, 'TF400', 'backoff_cap_seconds', 'cap -Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, 86400.1)$$, 'TF400', 'backoff_cap_seconds', 'cap above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, 300, NULL)$$, 'TF400', 'backoff_jitter', 'jitter NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, 300, -0.1)$$, 'TF400', 'backoff_jitter', 'a negative jitter is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, 300, 1.1)$$, 'TF400', 'backoff_jitter', 'jitter above 1 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype_val', 2, 300, 'NaN')$$, 'TF400', 'backoff_jitter', 'jitter NaN is TF400');

SELECT is((SELECT count(*)::int FROM taskforge.task_types WHERE task_type LIKE 'regtype%val%' OR task_type ILIKE '%regtype_val%'), 0,
    'no rejected call registered a type');

-- A rejected update leaves the existing policy alone.
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.kept', 4, 40, 0.4, 'kept')$$, 'register regtype.kept');
CREATE TEMP TABLE before AS SELECT * FROM taskforge.task_types WHERE task_type = 'regtype.kept';
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_task_type('regtype.kept', 4, -40, 0.4, 'changed')$$, 'TF400', 'backoff_cap_seconds',
    'an update with a bad cap is TF400');
SELECT is((SELECT t::text FROM taskforge.task_types t WHERE task_type = 'regtype.kept'), (SELECT b::text FROM before b),
    'the existing row is unchanged');

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.edges_low', 0, 0, 0)$$, 'base 0, cap 0, jitter 0 are accepted');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.edges_high', 86400, 86400, 1)$$, 'base 86400, cap 86400, jitter 1 are accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
