-- taskforge._tf_cron_next(cron text, after timestamptz, timezone text) -> timestamptz
--                                                                     (private helper)
--
-- Purpose:    the next tick of a cron expression strictly after the instant `after`, with the
--             expression read on the wall clock of `timezone`. It walks the wall clock forward
--             from the minute after `after` (a whole month, day, hour or minute at a time when
--             that field does not match) to the first matching minute whose fire instant
--             (taskforge._tf_cron_fire_at: DST gaps and repeats) is after `after`. Ticks are
--             whole minutes of wall-clock time; seconds of `after` are ignored.
-- Parameters: cron      a 5-field expression (taskforge._tf_cron_parse).
--             after     the instant the tick must follow (finite).
--             timezone  a name from pg_timezone_names (checked by the callers).
-- Returns:    timestamptz > after. Every valid expression fires within 8 years (a 29 February
--             may be that far), so the walk is bounded.
-- Errors:     TF400 'cron: ...' for an invalid expression (taskforge._tf_cron_parse).
-- Locks:      none.  Clock: none (it works from `after`).
-- By hand:    yes, to see when an expression fires:
--               SELECT taskforge._tf_cron_next('30 2 * * *', now(), 'Europe/Berlin');
CREATE OR REPLACE FUNCTION taskforge._tf_cron_next(cron text, after timestamptz, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c record;
    v_t timestamp := date_trunc('minute', after AT TIME ZONE _tf_cron_next.timezone) + interval '1 minute';
    v_limit constant timestamp := v_t + interval '9 years';
    v_field int;
    v_next int;
    v_fire timestamptz;
    v_day_ok boolean;
    v_weekday_ok boolean;
BEGIN
    c := taskforge._tf_cron_parse(cron);
    WHILE v_t < v_limit LOOP
        v_field := extract(month FROM v_t)::int;
        IF NOT v_field = ANY(c.months) THEN
            v_next := (SELECT min(m) FROM unnest(c.months) m WHERE m > v_field);
            v_t := CASE WHEN v_next IS NULL THEN make_timestamp(extract(year FROM v_t)::int + 1, c.months[1], 1, 0, 0, 0)
                        ELSE make_timestamp(extract(year FROM v_t)::int, v_next, 1, 0, 0, 0) END;
            CONTINUE;
        END IF;
        v_day_ok := extract(day FROM v_t)::int = ANY(c.days);
        v_weekday_ok := extract(dow FROM v_t)::int = ANY(c.weekdays);
        IF NOT (CASE WHEN c.day_or THEN v_day_ok OR v_weekday_ok ELSE v_day_ok AND v_weekday_ok END) THEN
            v_t := date_trunc('day', v_t) + interval '1 day';
            CONTINUE;
        END IF;
        v_field := extract(hour FROM v_t)::int;
        IF NOT v_field = ANY(c.hours) THEN
            v_next := (SELECT min(h) FROM unnest(c.hours) h WHERE h > v_field);
            v_t := CASE WHEN v_next IS NULL THEN date_trunc('day', v_t) + interval '1 day'
                        ELSE date_trunc('day', v_t) + make_interval(hours => v_next) END;
            CONTINUE;
        END IF;
        v_field := extract(minute FROM v_t)::int;
        IF NOT v_field = ANY(c.minutes) THEN
            v_next := (SELECT min(m) FROM unnest(c.minutes) m WHERE m > v_field);
            v_t := CASE WHEN v_next IS NULL THEN date_trunc('hour', v_t) + interval '1 hour'
                        ELSE date_trunc('hour', v_t) + make_interval(mins => v_next) END;
            CONTINUE;
        END IF;
        -- v_t matches. Its fire instant can be at or before `after` only around DST: a repeated
        -- wall-clock time whose first occurrence is past, or a gap time mapped to a jump already
        -- past. Then the walk goes on.
        v_fire := taskforge._tf_cron_fire_at(v_t, _tf_cron_next.timezone);
        IF v_fire > after THEN
            RETURN v_fire;
        END IF;
        v_t := v_t + interval '1 minute';
    END LOOP;
    PERFORM taskforge._tf_broken_invariant(format('cron %s found no tick within 9 years after %s',
        quote_literal(cron), after));
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_next(text, timestamptz, text) IS
    'Private: next tick of a 5-field cron expression strictly after an instant, on the wall clock of a time zone (DST handled by _tf_cron_fire_at). Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge._tf_cron_next(text, timestamptz, text) FROM PUBLIC;
