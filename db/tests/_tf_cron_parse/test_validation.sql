-- _tf_cron_parse refuses every malformed expression with TF400 'cron: ...' naming the field and the problem.
BEGIN;
SELECT plan(31);
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
-- throws_message(sql, message, description): TF400 with exactly that message.
CREATE FUNCTION pg_temp.throws_message(p_sql text, p_message text, p_description text)
RETURNS text LANGUAGE sql AS $$ SELECT throws_ok(p_sql, 'TF400', p_message, p_description) $$;

SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse(NULL)$$, 'cron: must not be NULL', 'NULL');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('')$$,
    'cron: must have 5 fields (minute hour day-of-month month day-of-week), got 0', 'empty');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('* * * *')$$,
    'cron: must have 5 fields (minute hour day-of-month month day-of-week), got 4', 'four fields');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 * * * * *')$$,
    'cron: must have 5 fields (minute hour day-of-month month day-of-week), got 6', 'six fields (no seconds field)');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse(repeat('1,', 100) || '1 * * * *')$$,
    'cron: must be at most 200 characters, got 209', 'longer than 200 characters');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('@reboot')$$,
    'cron: unknown macro ''@reboot'' (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)', 'an unknown macro');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('60 * * * *')$$,
    'cron: minute field ''60'': 60 is out of range 0-59', 'minute 60');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 24 * * *')$$,
    'cron: hour field ''24'': 24 is out of range 0-23', 'hour 24');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 0 * *')$$,
    'cron: day-of-month field ''0'': 0 is out of range 1-31', 'day 0');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 32 * *')$$,
    'cron: day-of-month field ''32'': 32 is out of range 1-31', 'day 32');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 * 13 *')$$,
    'cron: month field ''13'': 13 is out of range 1-12', 'month 13');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 * * 8')$$,
    'cron: day-of-week field ''8'': 8 is out of range 0-7', 'weekday 8');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('99999999999 * * * *')$$,
    'cron: minute field ''99999999999'': 99999999999 is out of range 0-59', 'a number too long for int');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('-5 * * * *')$$,
    'cron: minute field ''-5'': ''-5'' is missing a number', 'a negative number');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 5- * * *')$$,
    'cron: hour field ''5-'': ''5-'' is missing a number', 'a range without end');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 17-9 * * *')$$,
    'cron: hour field ''17-9'': range ''17-9'' starts after it ends', 'a range that runs backwards');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 1-2-3 * * *')$$,
    'cron: hour field ''1-2-3'': ''1-2-3'' is not a range a-b', 'a range with three ends');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('*/0 * * * *')$$,
    'cron: minute field ''*/0'': step must be a whole number from 1 to 60, got ''0''', 'step 0');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('*/61 * * * *')$$,
    'cron: minute field ''*/61'': step must be a whole number from 1 to 60, got ''61''', 'a step longer than the field');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('*/x * * * *')$$,
    'cron: minute field ''*/x'': step must be a whole number from 1 to 60, got ''x''', 'a step that is not a number');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('*/5/2 * * * *')$$,
    'cron: minute field ''*/5/2'': ''*/5/2'' has more than one /', 'two steps');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('5/15 * * * *')$$,
    'cron: minute field ''5/15'': a step needs a range or *: write 5-59/15 or */15', 'a step after a single value');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('1,,2 * * * *')$$,
    'cron: minute field ''1,,2'': has an empty list element', 'an empty list element');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 * FOO *')$$,
    'cron: month field ''FOO'': ''FOO'' is not a number or a name (JAN..DEC)', 'an unknown month name');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 * * MONDAY')$$,
    'cron: day-of-week field ''MONDAY'': ''MONDAY'' is not a number or a name (SUN..SAT)', 'a long weekday name');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('MON * * * *')$$,
    'cron: minute field ''MON'': ''MON'' is not a number', 'a name in a field without names');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 L * *')$$,
    'cron: day-of-month field ''L'': ''L'' is not a number (the L, W, # and ? extensions are not supported)', 'L (last day)');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 ? * MON#2')$$,
    'cron: day-of-month field ''?'': ''?'' is not a number (the L, W, # and ? extensions are not supported)', '? and #');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 30 2 *')$$,
    'cron: the expression never fires: no month of the month field ''2'' has a day of the day-of-month field ''30''', '30 February');
SELECT pg_temp.throws_message($$SELECT taskforge._tf_cron_parse('0 0 31 4,6,9,11 *')$$,
    'cron: the expression never fires: no month of the month field ''4,6,9,11'' has a day of the day-of-month field ''31''',
    '31 in months of 30 days');
SELECT pg_temp.throws_arg($$SELECT taskforge._tf_cron_parse('0 0 * * 1 extra')$$, 'TF400', 'cron', 'the COLUMN-style prefix names the argument cron');
SELECT * FROM finish();
ROLLBACK;
