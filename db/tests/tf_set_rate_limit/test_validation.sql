-- tf_set_rate_limit: a bad rate_key, per_second or burst (or a burst without per_second) is TF400 with the argument in the message and the COLUMN field; nothing is written, an existing limit is left as it was.
BEGIN;
SELECT plan(21);
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_message text; v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
        RETURN v_state || ' ' || v_column || ' ' || v_message;
    END;
    RETURN 'no error';
END;
$helper$;
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_v_old', 3, 2); END $$;
CREATE TEMP TABLE before AS SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_v_old';

SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit(NULL, 1)$$),
          'TF400 rate_key rate_key: must be 1 to 200 characters, got NULL', 'a NULL rate_key');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('', 1)$$),
          'TF400 rate_key rate_key: must be 1 to 200 characters, got 0', 'an empty rate_key');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit(repeat('k', 201), 1)$$),
          'TF400 rate_key rate_key: must be 1 to 200 characters, got 201', 'a rate_key of 201 characters');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit(NULL, NULL)$$),
          'TF400 rate_key rate_key: must be 1 to 200 characters, got NULL', 'a NULL rate_key also when removing');

SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 0)$$), 'TF400 per_second per_second: %',
             'per_second 0');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', -1)$$), 'TF400 per_second per_second: %',
             'per_second -1');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 'NaN')$$), 'TF400 per_second per_second: %',
             'per_second NaN');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 'Infinity')$$),
             'TF400 per_second per_second: %', 'per_second Infinity');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', '-Infinity')$$),
             'TF400 per_second per_second: %', 'per_second -Infinity');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 1000000.5)$$),
             'TF400 per_second per_second: %', 'per_second above 1000000');

SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 5, 0)$$), 'TF400 burst burst: %', 'burst 0');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 5, -1)$$), 'TF400 burst burst: %', 'burst -1');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 5, 1.5)$$),
          'TF400 burst burst: must be a whole number between 1 and 1000000, got 1.5', 'burst 1.5');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 5, 1000001)$$), 'TF400 burst burst: %',
             'burst above 1000000');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', 5, 'NaN')$$), 'TF400 burst burst: %',
             'burst NaN');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_new', NULL, 3)$$),
          'TF400 burst burst: must be NULL when per_second is NULL (the limit is removed)', 'a burst without per_second');

-- The same refusals on a key that has a limit.
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_old', 0)$$), 'TF400 per_second per_second: %',
             'per_second 0 on an existing limit');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_old', 5, 0)$$), 'TF400 burst burst: %',
             'burst 0 on an existing limit');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_rate_limit('rk_v_old', NULL, 2)$$), 'TF400 burst burst: %',
             'a burst without per_second on an existing limit (not a removal)');

SELECT is_empty($$SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_v_new' OR length(rate_key) > 200 OR rate_key = ''$$,
                'no refused call wrote a limit');
SELECT results_eq($$SELECT * FROM taskforge.rate_limits WHERE rate_key = 'rk_v_old'$$, $$SELECT * FROM before$$,
                  'the existing limit is unchanged (per_second, burst, tokens, refilled_at, updated_at)');
SELECT * FROM finish();
ROLLBACK;
