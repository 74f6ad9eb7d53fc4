-- taskforge._tf_cron_fire_at(local_time timestamp, timezone text) -> timestamptz
--                                                                     (private helper)
--
-- Purpose:    the instant at which a schedule whose cron matched the wall-clock time local_time
--             in timezone fires. Daylight saving time:
--               - a wall-clock time that happens once: that instant;
--               - a repeated wall-clock time (the clocks go back, e.g. 02:30 on the last Sunday
--                 of October in Europe/Berlin): its FIRST occurrence only, so the tick fires
--                 once (the callers skip it when that occurrence is already past);
--               - a wall-clock time that does not exist (the clocks go forward, e.g. 02:30 on
--                 the last Sunday of March in Europe/Berlin): the first instant after the gap,
--                 the moment the clocks jump (03:00 CEST there). Every tick inside one gap maps
--                 to that same instant, so they fire once together, as Vixie cron runs jobs of
--                 a skipped hour right after the change.
--             PostgreSQL's own reading of such times (timestamp AT TIME ZONE) picks the later
--             occurrence and shifts a gap time by the jump, so it is not used alone.
-- Parameters: local_time  a wall-clock time (timestamp without time zone).
--             timezone    a name from pg_timezone_names (checked by the callers).
-- Returns:    timestamptz.
-- Errors:     none of its own (an unknown zone is PostgreSQL's 22023).
-- Locks:      none.  Clock: none.
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_fire_at(local_time timestamp, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    -- local_time read as if it were UTC; every real reading is this minus the zone's UTC offset.
    v_as_utc constant timestamptz := local_time AT TIME ZONE 'UTC';
    v_candidates timestamptz[];
    v_lo timestamptz;
    v_hi timestamptz;
    v_mid timestamptz;
BEGIN
    -- The zone's offsets a day before and a day after (zones change offset at most once within
    -- a day), applied to local_time: the readings that give local_time back are its occurrences.
    v_candidates := ARRAY(
        SELECT DISTINCT v_as_utc - ((p AT TIME ZONE _tf_cron_fire_at.timezone) - (p AT TIME ZONE 'UTC'))
          FROM unnest(ARRAY[v_as_utc - interval '1 day', v_as_utc + interval '1 day']) p
         ORDER BY 1);
    IF (v_candidates[1] AT TIME ZONE _tf_cron_fire_at.timezone) = local_time THEN
        RETURN v_candidates[1];
    END IF;
    IF (v_candidates[cardinality(v_candidates)] AT TIME ZONE _tf_cron_fire_at.timezone) = local_time THEN
        RETURN v_candidates[cardinality(v_candidates)];
    END IF;

    -- In a gap: the earlier reading is still before local_time on the wall clock, the later one
    -- already after it. The jump lies between them, on a whole second: bisect to it.
    v_lo := v_candidates[1];
    v_hi := v_candidates[cardinality(v_candidates)];
    WHILE v_hi - v_lo > interval '1 second' LOOP
        v_mid := to_timestamp(floor((extract(epoch FROM v_lo) + extract(epoch FROM v_hi)) / 2));
        IF (v_mid AT TIME ZONE _tf_cron_fire_at.timezone) > local_time THEN
            v_hi := v_mid;
        ELSE
            v_lo := v_mid;
        END IF;
    END LOOP;
    RETURN v_hi;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_fire_at(timestamp, text) IS
    'Private: fire instant of a matched wall-clock time in a zone (DST: first occurrence of a repeated time; the end of a gap for a skipped one).';
REVOKE ALL ON FUNCTION taskforge._tf_cron_fire_at(timestamp, text) FROM PUBLIC;
