-- tf_set_concurrency_limit: a bad concurrency_key or a max_running outside whole numbers 1..1000000 is TF400 with the argument in the message and the COLUMN field; nothing is written, an existing limit is left as it was.
BEGIN;
SELECT plan(12);
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
DO $$ BEGIN PERFORM taskforge.tf_set_concurrency_limit('ck_v_old', 4); END $$;
CREATE TEMP TABLE before AS SELECT * FROM taskforge.concurrency_keys WHERE concurrency_key = 'ck_v_old';

SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit(NULL, 1)$$),
          'TF400 concurrency_key concurrency_key: must be 1 to 200 characters, got NULL', 'a NULL concurrency_key');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('', 1)$$),
          'TF400 concurrency_key concurrency_key: must be 1 to 200 characters, got 0', 'an empty concurrency_key');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit(repeat('c', 201), 1)$$),
          'TF400 concurrency_key concurrency_key: must be 1 to 200 characters, got 201', 'a concurrency_key of 201 characters');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit(NULL, NULL)$$),
          'TF400 concurrency_key concurrency_key: must be 1 to 200 characters, got NULL', 'a NULL key also when removing');

SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_new', 0)$$),
          'TF400 max_running max_running: must be between 1 and 1000000, got 0', 'max_running 0');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_new', -1)$$),
             'TF400 max_running max_running: %', 'max_running -1');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_new', 1.5)$$),
          'TF400 max_running max_running: must be a whole number between 1 and 1000000, got 1.5', 'max_running 1.5');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_new', 1000001)$$),
             'TF400 max_running max_running: %', 'max_running above 1000000');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_new', 'NaN')$$),
             'TF400 max_running max_running: %', 'max_running NaN');
SELECT alike(pg_temp.refusal($$SELECT taskforge.tf_set_concurrency_limit('ck_v_old', 0)$$),
             'TF400 max_running max_running: %', 'max_running 0 on a key that has a limit');

SELECT is_empty($$SELECT * FROM taskforge.concurrency_keys
                   WHERE concurrency_key = 'ck_v_new' OR length(concurrency_key) > 200 OR concurrency_key = ''$$,
                'no refused call created a key');
SELECT results_eq($$SELECT * FROM taskforge.concurrency_keys WHERE concurrency_key = 'ck_v_old'$$, $$SELECT * FROM before$$,
                  'the existing limit is unchanged (max_running, updated_at)');
SELECT * FROM finish();
ROLLBACK;
