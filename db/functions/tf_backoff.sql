-- taskforge.tf_backoff(failed_attempt numeric, base_seconds double precision DEFAULT 2,
--                      cap_seconds double precision DEFAULT 300, jitter double precision DEFAULT 0.2)
--   -> double precision
--
-- Purpose:    how long a task waits after its failed attempt number failed_attempt before it
--             may run again:  min(cap, base * 2^(failed_attempt - 1) * (1 + U(-jitter, +jitter))).
--             Never negative, never above cap, no overflow for any failed_attempt up to
--             2^31 - 1 (large exponents are compared in log space instead of being computed).
-- Parameters: failed_attempt  a whole number 1..2147483647 (the attempt number that just failed;
--                             declared numeric, so any number a caller writes gets TF400).
--             base_seconds    0..86400 seconds.   cap_seconds  0..86400 seconds.
--             jitter          0..1, the relative spread of the uniform random factor.
-- Returns:    seconds (double precision).
-- Errors:     TF400 naming the argument for NULL, non-finite or out-of-range input.
-- Locks:      none.  Clock: none (uses random(), so VOLATILE).
-- By hand:    yes; it reads and writes nothing.
CREATE OR REPLACE FUNCTION taskforge.tf_backoff(
    failed_attempt numeric,
    base_seconds double precision DEFAULT 2,
    cap_seconds double precision DEFAULT 300,
    jitter double precision DEFAULT 0.2)
RETURNS double precision
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_variable
DECLARE
    v_factor double precision;
    v_exponent int;
BEGIN
    IF failed_attempt IS NULL OR failed_attempt NOT BETWEEN 1 AND 2147483647 OR failed_attempt <> trunc(failed_attempt) THEN
        PERFORM taskforge._tf_check_int('failed_attempt', failed_attempt, 1, 2147483647);
    END IF;
    PERFORM taskforge._tf_check_seconds('base_seconds', base_seconds, 0, 86400);
    PERFORM taskforge._tf_check_seconds('cap_seconds', cap_seconds, 0, 86400);
    IF jitter IS NULL OR jitter = 'NaN'::float8 OR jitter < 0 OR jitter > 1 THEN
        PERFORM taskforge._tf_invalid('jitter', format('must be between 0 and 1, got %s', coalesce(jitter::text, 'NULL')));
    END IF;

    v_factor := 1 + jitter * (2 * random() - 1);          -- in [1 - jitter, 1 + jitter]
    IF base_seconds = 0 OR cap_seconds = 0 OR v_factor <= 0 THEN
        RETURN 0;
    END IF;
    v_exponent := failed_attempt - 1;
    -- base * 2^e * factor >= cap  <=>  ln(base) + e*ln(2) + ln(factor) >= ln(cap): no overflow.
    IF ln(base_seconds) + v_exponent * ln(2::float8) + ln(v_factor) >= ln(cap_seconds) THEN
        RETURN cap_seconds;
    END IF;
    -- Below the cap, so 2^e is small enough to compute exactly.
    RETURN least(cap_seconds, base_seconds * power(2::float8, v_exponent) * v_factor);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision) IS
    'Retry delay in seconds after failed attempt n: min(cap, base*2^(n-1)*(1+U(-jitter,+jitter))); never negative, never above cap, no overflow. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_backoff(numeric, double precision, double precision, double precision)
    TO taskforge_worker, taskforge_scheduler, taskforge_client;
