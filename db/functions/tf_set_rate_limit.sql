-- taskforge.tf_set_rate_limit(rate_key text, per_second double precision, burst numeric DEFAULT NULL)
--   -> TABLE(previous_per_second double precision, previous_burst int)
--
-- Purpose:    set or clear the rate limit of a rate key (tf_submit's rate_key): a token bucket
--             holding at most burst tokens, refilled at per_second tokens per second of database
--             time. Each task of the key that a claim starts takes one token, in the claim's own
--             transaction and under the bucket's row lock, so in any window of T seconds (the
--             attempts' started_at) at most burst + per_second * T of the key's tasks start,
--             however many claimers run (docs/flow-control.md). A task with no token waits
--             QUEUED; nothing is refused at submit. A new bucket starts full; changing a
--             limit keeps the tokens the bucket holds now (at most the new burst).
-- Parameters: rate_key    1..200 characters.
--             per_second  finite, 0 < r <= 1000000 tokens per second, or NULL to remove the
--                         limit (the key's tasks then start without tokens).
--             burst       whole number 1..1000000, or NULL for max(1, ceil(per_second)).
-- Returns:    one row: the limit before the call (NULLs when there was none).
-- Errors:     TF400 naming the argument. Nothing written on error.
-- Locks:      the key's taskforge.rate_limits row (FOR UPDATE when it exists).
-- Notify:     pg_notify('taskforge', queue) for each queue with QUEUED tasks of the key when the
--             limit is raised or removed, so idle workers look again.
-- Clock:      clock_timestamp() at entry: the bucket's refill time.
-- By hand:    yes.
CREATE OR REPLACE FUNCTION taskforge.tf_set_rate_limit(
    rate_key text,
    per_second double precision,
    burst numeric DEFAULT NULL)
RETURNS TABLE(previous_per_second double precision, previous_burst int)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_old taskforge.rate_limits%ROWTYPE;
    v_burst int;
    v_tokens double precision;
    v_queues text[];
BEGIN
    PERFORM taskforge._tf_check_flow_key('rate_key', tf_set_rate_limit.rate_key, nullable => false);
    IF tf_set_rate_limit.per_second IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds('per_second', tf_set_rate_limit.per_second, 0, 1000000, true, 'tokens per second');
    END IF;
    IF tf_set_rate_limit.burst IS NOT NULL THEN
        PERFORM taskforge._tf_check_int('burst', tf_set_rate_limit.burst, 1, 1000000);
        IF tf_set_rate_limit.per_second IS NULL THEN
            PERFORM taskforge._tf_invalid('burst', 'must be NULL when per_second is NULL (the limit is removed)');
        END IF;
    END IF;
    SELECT * INTO v_old FROM taskforge.rate_limits r WHERE r.rate_key = tf_set_rate_limit.rate_key FOR UPDATE;
    IF tf_set_rate_limit.per_second IS NULL THEN
        DELETE FROM taskforge.rate_limits r WHERE r.rate_key = tf_set_rate_limit.rate_key;
    ELSE
        v_burst := coalesce(tf_set_rate_limit.burst::int, greatest(1, ceil(tf_set_rate_limit.per_second)::int));
        v_tokens := CASE WHEN v_old.rate_key IS NULL THEN v_burst
                         ELSE least(v_burst, v_old.tokens + v_old.per_second
                                    * greatest(0, extract(epoch FROM v_now - v_old.refilled_at)::double precision)) END;
        INSERT INTO taskforge.rate_limits AS r (rate_key, per_second, burst, tokens, refilled_at, created_at, updated_at)
        VALUES (tf_set_rate_limit.rate_key, tf_set_rate_limit.per_second, v_burst, v_tokens,
                greatest(v_now, v_old.refilled_at), v_now, v_now)
        ON CONFLICT (rate_key) DO UPDATE
           SET per_second = excluded.per_second, burst = excluded.burst, tokens = excluded.tokens,
               refilled_at = excluded.refilled_at, updated_at = excluded.updated_at;
    END IF;
    IF v_old.rate_key IS NOT NULL AND (tf_set_rate_limit.per_second IS NULL OR tf_set_rate_limit.per_second > v_old.per_second
                                       OR v_burst > v_old.burst) THEN
        SELECT array_agg(DISTINCT t.queue) INTO v_queues FROM taskforge.tasks t
         WHERE t.state = 'QUEUED' AND t.keyed AND t.rate_key = tf_set_rate_limit.rate_key;
        IF v_queues IS NOT NULL THEN
            PERFORM taskforge._tf_notify_queues(v_queues);
        END IF;
    END IF;
    RETURN QUERY SELECT v_old.per_second, v_old.burst;
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) IS
    'Set (per_second > 0, burst 1..1000000, default ceil(per_second)) or remove (NULL) the token-bucket rate limit of a rate key: at most burst + per_second * T starts in any T seconds. Returns the previous limit. Errors: TF400.';
REVOKE ALL ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_set_rate_limit(text, double precision, numeric) TO taskforge_client;
