-- taskforge._tf_cron_latest(cron text, due timestamptz, upto timestamptz, timezone text)
--   -> timestamptz                                                    (private helper)
--
-- Purpose:    the catch-up rule of tf_enqueue_periodic: given a tick `due` <= upto that has not
--             fired, the LATEST tick of the expression at or before `upto` (which is `due`
--             itself when no later tick has passed). Ticks missed in between are not returned:
--             a schedule that was not served for a while fires once, for its most recent tick.
--             Bisection over the missed span keeps this to a few dozen evaluations of
--             taskforge._tf_cron_next however long the span is (a year of a minutely schedule
--             included).
-- Parameters: cron      a 5-field expression.
--             due       a tick of the expression, <= upto.
--             upto      the current instant of the caller.
--             timezone  a name from pg_timezone_names.
-- Returns:    timestamptz t with due <= t <= upto, t a tick, and no tick in (t, upto].
-- Errors:     TF400 for an invalid expression.
-- Locks:      none.  Clock: none (it works from its arguments).
-- By hand:    harmless.
CREATE OR REPLACE FUNCTION taskforge._tf_cron_latest(cron text, due timestamptz, upto timestamptz, timezone text)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_lo timestamptz := due;   -- a tick <= upto
    v_hi timestamptz := upto;  -- no tick in (v_hi, upto]
    v_next timestamptz;
    v_mid timestamptz;
BEGIN
    LOOP
        v_next := taskforge._tf_cron_next(cron, v_lo, _tf_cron_latest.timezone);
        IF v_next > upto THEN
            RETURN v_lo;
        END IF;
        v_lo := v_next;
        -- Probe the middle of the span left: a tick after it moves v_lo there; none moves v_hi.
        v_mid := v_lo + (v_hi - v_lo) / 2;
        v_next := taskforge._tf_cron_next(cron, v_mid, _tf_cron_latest.timezone);
        IF v_next <= upto THEN
            v_lo := v_next;
        ELSE
            v_hi := v_mid;
        END IF;
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_cron_latest(text, timestamptz, timestamptz, text) IS
    'Private: catch-up rule: the latest tick at or before upto, starting from an unfired tick due (bisection).';
REVOKE ALL ON FUNCTION taskforge._tf_cron_latest(text, timestamptz, timestamptz, text) FROM PUBLIC;
