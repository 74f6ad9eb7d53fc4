-- taskforge._tf_cron_field(field text, expr text, min_value int, max_value int,
--     names text[] DEFAULT NULL) -> int[]                                 (private helper)
--
-- Purpose:    expand one field of a 5-field cron expression into the sorted set of values it
--             matches. Syntax (comma-separated list of items):
--               *        every value min_value..max_value
--               */n     every n-th value from min_value (step n: 1..max_value - min_value + 1)
--               a        one value
--               a-b      a through b (a <= b)
--               a-b/n    every n-th value from a through b
--             A value is a whole number, or, when names is given, a name (case-insensitive):
--             names[i] stands for min_value + i - 1 (JAN = 1 for months, SUN = 0 for weekdays).
--             Not supported, and refused: a/n without a range, the L, W, # and ? extensions.
-- Parameters: field      the field's name for messages: minute, hour, day-of-month, month,
--                        day-of-week.
--             expr       the field's text.
--             min_value, max_value  inclusive bounds of a value.
--             names      upper-case names of min_value, min_value + 1, ..., or NULL.
-- Returns:    int[], sorted, no duplicates, never empty.
-- Errors:     TF400 'cron: <field> field ''<expr>'': <problem>' (argument cron).
-- Locks:      none.  Clock: none.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_field(
    field text, expr text, min_value int, max_value int, names text[] DEFAULT NULL)
RETURNS int[]
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_where text := format('%s field %s: ', field, quote_literal(left(expr, 100)));
    v_item text;
    v_parts text[];
    v_bounds text[];
    v_step int;
    v_lo int;
    v_hi int;
    v_text text;
    v_value int;
    v_ends int[];
    v_values int[] := '{}';
BEGIN
    IF expr IS NULL OR expr = '' THEN
        PERFORM taskforge._tf_invalid('cron', v_where || 'is empty');
    END IF;
    FOREACH v_item IN ARRAY string_to_array(expr, ',') LOOP
        IF v_item = '' THEN
            PERFORM taskforge._tf_invalid('cron', v_where || 'has an empty list element');
        END IF;
        v_parts := string_to_array(v_item, '/');
        IF cardinality(v_parts) > 2 THEN
            PERFORM taskforge._tf_invalid('cron', v_where || format('%s has more than one /', quote_literal(v_item)));
        END IF;
        v_step := 1;
        IF cardinality(v_parts) = 2 THEN
            IF v_parts[2] !~ '^[0-9]{1,4}$' OR v_parts[2]::int NOT BETWEEN 1 AND max_value - min_value + 1 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('step must be a whole number from 1 to %s, got %s',
                    max_value - min_value + 1, quote_literal(v_parts[2])));
            END IF;
            v_step := v_parts[2]::int;
        END IF;

        IF v_parts[1] = '*' THEN
            v_lo := min_value;
            v_hi := max_value;
        ELSE
            v_bounds := string_to_array(v_parts[1], '-');
            IF cardinality(v_bounds) > 2 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('%s is not a range a-b', quote_literal(v_parts[1])));
            END IF;
            IF cardinality(v_bounds) = 1 AND cardinality(v_parts) = 2 THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format(
                    'a step needs a range or *: write %s-%s/%s or */%s', v_parts[1], max_value, v_step, v_step));
            END IF;
            v_ends := '{}';
            FOREACH v_text IN ARRAY v_bounds LOOP
                IF v_text ~ '^[0-9]+$' THEN
                    IF length(v_text) > 4 OR v_text::int NOT BETWEEN min_value AND max_value THEN
                        PERFORM taskforge._tf_invalid('cron', v_where || format('%s is out of range %s-%s',
                            left(v_text, 20), min_value, max_value));
                    END IF;
                    v_value := v_text::int;
                ELSIF names IS NOT NULL AND upper(v_text) = ANY(names) THEN
                    v_value := min_value + array_position(names, upper(v_text)) - 1;
                ELSIF v_text = '' THEN
                    PERFORM taskforge._tf_invalid('cron', v_where || format('%s is missing a number', quote_literal(v_item)));
                ELSE
                    PERFORM taskforge._tf_invalid('cron', v_where || format('%s is not a number%s%s', quote_literal(left(v_text, 20)),
                        CASE WHEN names IS NOT NULL
                             THEN format(' or a name (%s..%s)', names[1], names[cardinality(names)]) ELSE '' END,
                        CASE WHEN v_text ~ '[LlWw#?]' THEN ' (the L, W, # and ? extensions are not supported)' ELSE '' END));
                END IF;
                v_ends := v_ends || v_value;
            END LOOP;
            v_lo := v_ends[1];
            v_hi := v_ends[cardinality(v_ends)];
            IF v_lo > v_hi THEN
                PERFORM taskforge._tf_invalid('cron', v_where || format('range %s starts after it ends', quote_literal(v_parts[1])));
            END IF;
        END IF;
        v_values := v_values || ARRAY(SELECT generate_series(v_lo, v_hi, v_step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM unnest(v_values) v ORDER BY v);
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_field(text, text, int, int, text[]) IS
    'Private: expands one cron field (*, lists, ranges, steps, names) to its sorted values. Errors: TF400 cron: naming the field.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_field(text, text, int, int, text[]) FROM PUBLIC;
