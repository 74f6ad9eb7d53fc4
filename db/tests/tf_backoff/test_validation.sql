-- tf_backoff rejects NULL, non-finite and out-of-range arguments with TF400 naming the argument, and accepts the edge values.
BEGIN;
SELECT plan(25);
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

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(NULL)$$, 'TF400', 'failed_attempt', 'failed_attempt NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(0)$$, 'TF400', 'failed_attempt', 'failed_attempt 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(-2147483648)$$, 'TF400', 'failed_attempt', 'failed_attempt -2^31 is TF400');

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, NULL)$$, 'TF400', 'base_seconds', 'base_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, -0.001)$$, 'TF400', 'base_seconds', 'a negative base_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 'NaN')$$, 'TF400', 'base_seconds', 'base_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 'Infinity')$$, 'TF400', 'base_seconds', 'base_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, '-Infinity')$$, 'TF400', 'base_seconds', 'base_seconds -Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 86400.5)$$, 'TF400', 'base_seconds', 'base_seconds above 86400 is TF400');

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, NULL)$$, 'TF400', 'cap_seconds', 'cap_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, -1)$$, 'TF400', 'cap_seconds', 'a negative cap_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 'NaN')$$, 'TF400', 'cap_seconds', 'cap_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 'Infinity')$$, 'TF400', 'cap_seconds', 'cap_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 86401)$$, 'TF400', 'cap_seconds', 'cap_seconds above 86400 is TF400');

SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 300, NULL)$$, 'TF400', 'jitter', 'jitter NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 300, -0.01)$$, 'TF400', 'jitter', 'a negative jitter is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 300, 1.01)$$, 'TF400', 'jitter', 'jitter above 1 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 300, 'NaN')$$, 'TF400', 'jitter', 'jitter NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1, 2, 300, 'Infinity')$$, 'TF400', 'jitter', 'jitter Infinity is TF400');

SELECT is(taskforge.tf_backoff(1, 86400, 86400, 0), 86400::float8, 'base and cap 86400 are accepted');
SELECT is(taskforge.tf_backoff(1, 0, 0, 0), 0::float8, 'base and cap 0 are accepted');
SELECT ok(taskforge.tf_backoff(1, 2, 300, 1) BETWEEN 0 AND 4, 'jitter 1 is accepted');
SELECT is(taskforge.tf_backoff(failed_attempt => 3, base_seconds => 1, cap_seconds => 100, jitter => 0), 4::float8,
    'named arguments are accepted');
SELECT throws_ok($$SELECT taskforge.tf_backoff(attempt => 1)$$, '42883', NULL, 'an unknown parameter name does not resolve');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
