-- taskforge._tf_cron_parse(cron text)
--   -> (minutes int[], hours int[], days int[], months int[], weekdays int[], day_or boolean)
--                                                                     (private helper)
--
-- Purpose:    parse a standard 5-field cron expression, "minute hour day-of-month month
--             day-of-week", fields separated by spaces or tabs:
--               minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC,
--               day-of-week 0-7 or SUN-SAT (0 and 7 are both Sunday).
--             Each field is *, a list, ranges and steps (see _tf_cron_field). The macros
--             @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly stand for
--             0 0 1 1 *, 0 0 1 * *, 0 0 * * 0, 0 0 * * * and 0 * * * *.
--             Day rule (Vixie cron): when neither the day-of-month nor the day-of-week field
--             starts with *, a day matches when EITHER matches ("0 0 1 * MON" fires on the 1st
--             and on every Monday); otherwise it must match both (a field starting with *,
--             such as * or */2, restricts together with the other field).
-- Parameters: cron  the expression, at most 200 characters.
-- Returns:    the sorted values of each field (weekdays 0-6, Sunday 0), and day_or: whether
--             the either-matches rule applies.
-- Errors:     TF400 'cron: <problem>': NULL, too long, not 5 fields, an unknown macro, a bad
--             field (the message names it), or an expression that never fires (a
--             day-of-month that no month of the month field has, such as 30 2).
-- Locks:      none.  Clock: none.
-- By hand:    harmless; it shows how an expression is read.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_parse(
    cron text,
    OUT minutes int[],
    OUT hours int[],
    OUT days int[],
    OUT months int[],
    OUT weekdays int[],
    OUT day_or boolean)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_text text;
    v_fields text[];
BEGIN
    IF cron IS NULL THEN
        PERFORM taskforge._tf_invalid('cron', 'must not be NULL');
    END IF;
    IF length(cron) > 200 THEN
        PERFORM taskforge._tf_invalid('cron', format('must be at most 200 characters, got %s', length(cron)));
    END IF;
    v_text := btrim(cron, E' \t\n\r');
    IF left(v_text, 1) = '@' THEN
        v_text := CASE lower(v_text)
            WHEN '@yearly' THEN '0 0 1 1 *'
            WHEN '@annually' THEN '0 0 1 1 *'
            WHEN '@monthly' THEN '0 0 1 * *'
            WHEN '@weekly' THEN '0 0 * * 0'
            WHEN '@daily' THEN '0 0 * * *'
            WHEN '@midnight' THEN '0 0 * * *'
            WHEN '@hourly' THEN '0 * * * *'
        END;
        IF v_text IS NULL THEN
            PERFORM taskforge._tf_invalid('cron', format(
                'unknown macro %s (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)',
                quote_literal(left(btrim(cron), 40))));
        END IF;
    END IF;
    v_fields := CASE WHEN v_text = '' THEN '{}'::text[] ELSE regexp_split_to_array(v_text, E'[ \t\n\r]+') END;
    IF cardinality(v_fields) <> 5 THEN
        PERFORM taskforge._tf_invalid('cron', format(
            'must have 5 fields (minute hour day-of-month month day-of-week), got %s', cardinality(v_fields)));
    END IF;

    minutes := taskforge._tf_cron_field('minute', v_fields[1], 0, 59);
    hours := taskforge._tf_cron_field('hour', v_fields[2], 0, 23);
    days := taskforge._tf_cron_field('day-of-month', v_fields[3], 1, 31);
    months := taskforge._tf_cron_field('month', v_fields[4], 1, 12,
        ARRAY['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']);
    weekdays := taskforge._tf_cron_field('day-of-week', v_fields[5], 0, 7,
        ARRAY['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']);
    weekdays := ARRAY(SELECT DISTINCT w % 7 FROM unnest(weekdays) w ORDER BY 1);
    day_or := left(v_fields[3], 1) <> '*' AND left(v_fields[5], 1) <> '*';

    -- Both day fields must hold: some listed month must have one of the listed days (every such
    -- date falls on every weekday in some year). With the either-matches rule any weekday will do.
    IF NOT day_or AND NOT EXISTS (
        SELECT 1 FROM unnest(months) m, unnest(days) d
         WHERE d <= CASE WHEN m = 2 THEN 29 WHEN m IN (4, 6, 9, 11) THEN 30 ELSE 31 END) THEN
        PERFORM taskforge._tf_invalid('cron', format(
            'the expression never fires: no month of the month field %s has a day of the day-of-month field %s',
            quote_literal(v_fields[4]), quote_literal(v_fields[3])));
    END IF;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_parse(text) IS
    'Private: parses a 5-field cron expression (Vixie day rule, JAN-DEC, SUN-SAT, 0 and 7 = Sunday, @daily...). Errors: TF400 cron: naming the field.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_parse(text) FROM PUBLIC;
