-- taskforge._tf_claim_keyed(worker_id uuid, queues text[], task_types text[], max_tasks int,
--     now timestamptz, picked bigint[], held_queues text[], held_room int[]) -> bigint[]
--                                                                        (private helper)
--
-- Purpose:    the keyed pick of a claim (taskforge._tf_claim_pick calls it when a keyed task,
--             one with a rate, concurrency or ordering key, is due): choose and lock due QUEUED
--             keyed tasks under their flow rules (docs/flow-control.md):
--               concurrency key  at most the key's max_running RUNNING (counted under the
--                                key's taskforge.concurrency_keys row lock, as a queue limit);
--               ordering key     only the key's head (its unfinished task of lowest id) can
--                                start, and only while none of the key is RUNNING, read
--                                again under the key's taskforge.ordering_keys row lock, so
--                                its tasks run one at a time in id order;
--               rate key         one token of the key's bucket per task (taskforge.rate_limits,
--                                under its row lock; refilled to now, never backwards).
--             Fair claiming: candidates are taken group by group, a group being a concurrency
--             key (up to max_tasks of its tasks in claim order), an ordering key's head, or a
--             rate key's tasks that carry no other key; they are tried in the order priority
--             DESC, then the task's rank within its group (the first of every group before
--             the second of any), then the concurrency key served longest ago first
--             (concurrency_keys.last_claimed_at, stamped by each claim that starts one of its
--             tasks), then created_at, task_id. So with equal priorities a claim of one task
--             rotates across the keys that have work: with K such keys, a key's n-th waiting
--             task starts within about n * K claims, however long the other keys' backlogs.
--             A keyed task also competes with the claim's plain picks: it is taken only while
--             fewer than max_tasks tasks rank before it (plain picks ahead of it in claim order,
--             plus keyed tasks already taken), so no token or slot is spent on a task the
--             claim then drops.
-- Parameters: worker_id, queues, task_types, max_tasks, now
--                          as taskforge._tf_claim_pick's (validated there).
--             picked       the plain picks of the same claim (locked, QUEUED), in claim order.
--             held_queues, held_room
--                          the limited queues whose row lock this claim holds and the room
--                          left in each after its plain picks; keyed tasks of any other
--                          limited queue, and of paused queues, are not taken.
-- Returns:    the ids taken (locked FOR UPDATE by this transaction, QUEUED), at most
--             max_tasks; the caller starts them with its plain picks (taskforge._tf_turn).
-- Errors:     none of its own.
-- Locks:      FOR UPDATE SKIP LOCKED on the tasks taken, on the concurrency_keys rows of the
--             limited keys it takes from (and of unlimited ones, for the rotation stamp, when
--             free), on the rate_limits rows of the rate keys and the ordering_keys rows of the
--             ordering keys it takes from (the lock submits and tf_retry take too): a key whose
--             row another claimer holds is skipped this time, never waited for. Under
--             REPEATABLE READ or SERIALIZABLE, limited concurrency keys and rate-limited keys
--             are skipped (their counts need READ COMMITTED's fresh reads).
-- Exactness:  a rate key is skipped when its bucket was refilled at a later instant than this
--             claim's now (a claimer whose clock read came before another's commit), so the
--             bucket's refill times follow the claims' now in lock order and the window bound
--             burst + per_second * T holds for the attempts' started_at exactly. Likewise an
--             ordering key's head is skipped while an earlier task of its key finished later
--             than this claim's now (a finish committed between this claim's clock read and its
--             snapshot; tasks_ordering_finished_idx, a few rows at most), so each task of the key starts
--             (started_at) at or after the previous one's finished_at.
-- Plans:      planned per call (flow control is opt-in; the plain claim path keeps its static
--             plans). The groups are found by loose index scans of tasks_ordering_key_idx and
--             tasks_rate_key_idx and tasks_concurrency_key_idx (joined to their concurrency_keys
--             rows), so the cost follows the number of keys with waiting work, not the length of
--             their backlogs nor the keys used in the past.
-- Clock:      now (the caller's).
-- By hand:    no; call tf_claim.
CREATE OR REPLACE FUNCTION taskforge._tf_claim_keyed(
    worker_id uuid,
    queues text[],
    task_types text[],
    max_tasks int,
    now timestamptz,
    picked bigint[],
    held_queues text[],
    held_room int[])
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET enable_sort = on
SET enable_bitmapscan = on
AS $fn$
#variable_conflict use_column
DECLARE
    v_now timestamptz := _tf_claim_keyed.now;
    v_read_committed boolean := current_setting('transaction_isolation') = 'read committed';
    v_skip_queues text[];
    v_queue_room int[] := coalesce(_tf_claim_keyed.held_room, '{}');
    v_taken bigint[] := '{}';
    -- Concurrency keys met in this call: their room left (NULL: unlimited) and whether this
    -- call holds their row (for the rotation stamp); keys to skip.
    v_ck text[] := '{}';
    v_ck_room int[] := '{}';
    v_ck_held boolean[] := '{}';
    v_ck_used boolean[] := '{}';
    v_ck_skip text[] := '{}';
    -- Rate keys met in this call: tokens left (NULL: the key has no limit); keys to skip.
    v_rk text[] := '{}';
    v_rk_tokens double precision[] := '{}';
    v_rk_skip text[] := '{}';
    -- Ordering keys whose row another transaction holds (a submit or a claim): skipped.
    v_ok_skip text[] := '{}';
    v_i int;
    v_ahead int;
    v_found boolean;
    v_max int;
    v_room int;
    v_rate taskforge.rate_limits%ROWTYPE;
    c record;
BEGIN
    SELECT array_agg(q.queue) INTO v_skip_queues
      FROM taskforge.queues q
     WHERE q.paused_at IS NOT NULL
        OR (q.max_running IS NOT NULL AND q.queue <> ALL (coalesce(_tf_claim_keyed.held_queues, '{}')));
    v_skip_queues := coalesce(v_skip_queues, '{}');

    FOR c IN
        WITH RECURSIVE
        -- Ordering keys with unfinished tasks and their heads, with the columns the claim
        -- reads (a loose scan: one index descent and one heap fetch per key, no join after).
        heads AS (
            (SELECT t.ordering_key, t.task_id, t.state, t.concurrency_key, t.scheduled_at, t.attempt_count,
                    t.max_attempts, t.queue, t.task_type, t.priority, t.created_at, t.rate_key
               FROM taskforge.tasks t
              WHERE t.ordering_key IS NOT NULL AND t.finished_at IS NULL
              ORDER BY t.ordering_key, t.task_id LIMIT 1)
            UNION ALL
            SELECT n.ordering_key, n.task_id, n.state, n.concurrency_key, n.scheduled_at, n.attempt_count,
                   n.max_attempts, n.queue, n.task_type, n.priority, n.created_at, n.rate_key
              FROM heads h
             CROSS JOIN LATERAL (SELECT t.ordering_key, t.task_id, t.state, t.concurrency_key, t.scheduled_at,
                                        t.attempt_count, t.max_attempts, t.queue, t.task_type, t.priority,
                                        t.created_at, t.rate_key
                                   FROM taskforge.tasks t
                                  WHERE t.ordering_key > h.ordering_key AND t.finished_at IS NULL
                                  ORDER BY t.ordering_key, t.task_id LIMIT 1) n
        ),
        -- Rate keys of QUEUED tasks that carry no other key (a loose scan as well).
        rate_keys AS (
            (SELECT t.rate_key FROM taskforge.tasks t
              WHERE t.state = 'QUEUED' AND t.rate_key IS NOT NULL AND t.concurrency_key IS NULL
                AND t.ordering_key IS NULL
              ORDER BY t.rate_key LIMIT 1)
            UNION ALL
            SELECT n.rate_key
              FROM rate_keys r
             CROSS JOIN LATERAL (SELECT t.rate_key FROM taskforge.tasks t
                                  WHERE t.state = 'QUEUED' AND t.rate_key > r.rate_key AND t.concurrency_key IS NULL
                                    AND t.ordering_key IS NULL
                                  ORDER BY t.rate_key LIMIT 1) n
        ),
        -- Concurrency keys of QUEUED tasks (a loose scan of tasks_concurrency_key_idx), with
        -- their rows: keys without waiting work cost nothing, however many rows there are.
        ckeys AS (
            (SELECT t.concurrency_key FROM taskforge.tasks t
              WHERE t.state = 'QUEUED' AND t.concurrency_key IS NOT NULL
              ORDER BY t.concurrency_key LIMIT 1)
            UNION ALL
            SELECT n.concurrency_key
              FROM ckeys c
             CROSS JOIN LATERAL (SELECT t.concurrency_key FROM taskforge.tasks t
                                  WHERE t.state = 'QUEUED' AND t.concurrency_key > c.concurrency_key
                                  ORDER BY t.concurrency_key LIMIT 1) n
        ),
        candidates AS (
            -- Each concurrency key: its first due tasks in claim order (ordering heads only).
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, t.concurrency_key,
                   row_number() OVER (PARTITION BY k.concurrency_key ORDER BY t.priority DESC, t.created_at, t.task_id)
                       AS rank,
                   k.last_claimed_at AS served_at, t.ordering_key
              FROM ckeys w
              JOIN taskforge.concurrency_keys k ON k.concurrency_key = w.concurrency_key
             CROSS JOIN LATERAL (
                  SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, t.concurrency_key, t.ordering_key
                    FROM taskforge.tasks t
                   WHERE t.state = 'QUEUED' AND t.concurrency_key = k.concurrency_key
                     AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
                     AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
                     AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
                     AND t.queue <> ALL (v_skip_queues)
                     AND (t.ordering_key IS NULL
                          OR (NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                           WHERE e.ordering_key = t.ordering_key AND e.finished_at IS NULL
                                             AND e.task_id < t.task_id)
                              AND NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                               WHERE e.ordering_key = t.ordering_key AND e.finished_at > v_now
                                                 AND e.task_id < t.task_id)))
                   ORDER BY t.priority DESC, t.created_at, t.task_id
                   LIMIT _tf_claim_keyed.max_tasks) t
            UNION ALL
            -- Each ordering key's head, when it is a due QUEUED task without a concurrency key.
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, NULL, 1, NULL, t.ordering_key
              FROM heads t
             WHERE t.state = 'QUEUED' AND t.concurrency_key IS NULL
               AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
               AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
               AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
               AND t.queue <> ALL (v_skip_queues)
               -- The previous task of its key finished by this claim's now (Exactness above).
               AND NOT EXISTS (SELECT 1 FROM taskforge.tasks e
                                WHERE e.ordering_key = t.ordering_key AND e.finished_at > v_now
                                  AND e.task_id < t.task_id)
            UNION ALL
            -- Each rate key: its first due tasks that carry no other key.
            SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key, NULL,
                   row_number() OVER (PARTITION BY r.rate_key ORDER BY t.priority DESC, t.created_at, t.task_id), NULL,
                   NULL
              FROM rate_keys r
             CROSS JOIN LATERAL (
                  SELECT t.task_id, t.priority, t.created_at, t.queue, t.rate_key
                    FROM taskforge.tasks t
                   WHERE t.state = 'QUEUED' AND t.rate_key = r.rate_key AND t.concurrency_key IS NULL
                     AND t.ordering_key IS NULL
                     AND t.scheduled_at <= v_now AND t.attempt_count < t.max_attempts
                     AND (_tf_claim_keyed.queues IS NULL OR t.queue = ANY (_tf_claim_keyed.queues))
                     AND (_tf_claim_keyed.task_types IS NULL OR t.task_type = ANY (_tf_claim_keyed.task_types))
                     AND t.queue <> ALL (v_skip_queues)
                   ORDER BY t.priority DESC, t.created_at, t.task_id
                   LIMIT _tf_claim_keyed.max_tasks) t
        )
        SELECT * FROM candidates
         ORDER BY priority DESC, rank, served_at NULLS FIRST, created_at, task_id
    LOOP
        EXIT WHEN cardinality(v_taken) >= _tf_claim_keyed.max_tasks;
        -- Plain picks ahead of it in claim order, plus the keyed tasks taken: the claim's room.
        IF cardinality(_tf_claim_keyed.picked) > 0 THEN
            SELECT count(*) INTO v_ahead FROM taskforge.tasks p
             WHERE p.task_id = ANY (_tf_claim_keyed.picked)
               AND (p.priority > c.priority OR (p.priority = c.priority AND (p.created_at, p.task_id) < (c.created_at, c.task_id)));
            CONTINUE WHEN v_ahead + cardinality(v_taken) >= _tf_claim_keyed.max_tasks;
        END IF;
        -- A limited queue: only one this claim holds, with room left.
        v_i := array_position(_tf_claim_keyed.held_queues, c.queue::text);
        CONTINUE WHEN v_i IS NOT NULL AND v_queue_room[v_i] <= 0;
        -- Its concurrency key: locked (or skipped) at first sight, then its room.
        IF c.concurrency_key IS NOT NULL THEN
            CONTINUE WHEN c.concurrency_key = ANY (v_ck_skip);
            IF NOT (c.concurrency_key = ANY (v_ck)) THEN
                SELECT true, k.max_running INTO v_found, v_max FROM taskforge.concurrency_keys k
                 WHERE k.concurrency_key = c.concurrency_key FOR UPDATE SKIP LOCKED;
                IF v_found IS NULL THEN
                    -- Held by another claimer: a limited key waits for the next claim; an
                    -- unlimited one is taken without its rotation stamp.
                    SELECT k.max_running INTO v_max FROM taskforge.concurrency_keys k
                     WHERE k.concurrency_key = c.concurrency_key;
                    IF v_max IS NOT NULL THEN
                        v_ck_skip := v_ck_skip || c.concurrency_key::text;
                        CONTINUE;
                    END IF;
                    v_room := NULL;
                ELSIF v_max IS NOT NULL THEN
                    IF NOT v_read_committed THEN
                        v_ck_skip := v_ck_skip || c.concurrency_key::text;
                        CONTINUE;
                    END IF;
                    SELECT v_max - count(*) INTO v_room FROM taskforge.tasks t
                     WHERE t.state = 'RUNNING' AND t.concurrency_key = c.concurrency_key;
                ELSE
                    v_room := NULL;
                END IF;
                v_ck := v_ck || c.concurrency_key::text;
                v_ck_room := v_ck_room || v_room;
                v_ck_held := v_ck_held || (v_found IS NOT NULL);
                v_ck_used := v_ck_used || false;
                v_found := NULL;
            END IF;
            v_i := array_position(v_ck, c.concurrency_key::text);
            CONTINUE WHEN v_ck_room[v_i] <= 0;
        END IF;
        -- Its rate key: the bucket locked (or skipped) at first sight and refilled to now.
        IF c.rate_key IS NOT NULL THEN
            CONTINUE WHEN c.rate_key = ANY (v_rk_skip);
            IF NOT (c.rate_key = ANY (v_rk)) THEN
                v_rate := NULL;
                SELECT * INTO v_rate FROM taskforge.rate_limits r WHERE r.rate_key = c.rate_key FOR UPDATE SKIP LOCKED;
                IF v_rate.rate_key IS NULL THEN
                    IF EXISTS (SELECT 1 FROM taskforge.rate_limits r WHERE r.rate_key = c.rate_key) THEN
                        v_rk_skip := v_rk_skip || c.rate_key::text;  -- held by another claimer
                        CONTINUE;
                    END IF;
                    v_rk := v_rk || c.rate_key::text;
                    v_rk_tokens := v_rk_tokens || NULL::double precision;  -- no limit
                ELSIF NOT v_read_committed OR v_rate.refilled_at > v_now THEN
                    v_rk_skip := v_rk_skip || c.rate_key::text;
                    CONTINUE;
                ELSE
                    v_rk := v_rk || c.rate_key::text;
                    v_rk_tokens := v_rk_tokens || least(v_rate.burst::double precision,
                        v_rate.tokens + v_rate.per_second * extract(epoch FROM v_now - v_rate.refilled_at)::double precision);
                END IF;
            END IF;
            v_i := array_position(v_rk, c.rate_key::text);
            CONTINUE WHEN v_rk_tokens[v_i] < 1;
        END IF;
        -- Its ordering key: the key's row locked (skipped when held elsewhere), then, read fresh
        -- under that lock, still the key's head with nothing of the key RUNNING (a task of the
        -- key redriven by tf_retry after a later one started, which tf_retry refuses under the
        -- same lock, or a claim that committed since this call's snapshot).
        IF c.ordering_key IS NOT NULL THEN
            CONTINUE WHEN c.ordering_key = ANY (v_ok_skip);
            PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = c.ordering_key FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                v_ok_skip := v_ok_skip || c.ordering_key::text;
                CONTINUE;
            END IF;
            -- Three probes, each on its own index (tasks_ordering_key_idx,
            -- tasks_ordering_finished_idx, tasks_lease_expiry_idx): an OR of the first two
            -- would be planned as one scan filtering a key's whole history.
            CONTINUE WHEN EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.ordering_key = c.ordering_key AND e.finished_at IS NULL
                                     AND e.task_id < c.task_id)
                       OR EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.ordering_key = c.ordering_key AND e.finished_at > v_now
                                     AND e.task_id < c.task_id)
                       OR EXISTS (SELECT 1 FROM taskforge.tasks e
                                   WHERE e.state = 'RUNNING' AND e.ordering_key = c.ordering_key);
        END IF;
        -- The task itself, if no other claimer has it.
        PERFORM 1 FROM taskforge.tasks t WHERE t.task_id = c.task_id AND t.state = 'QUEUED' FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        v_taken := v_taken || c.task_id;
        v_i := array_position(_tf_claim_keyed.held_queues, c.queue::text);
        IF v_i IS NOT NULL THEN
            v_queue_room[v_i] := v_queue_room[v_i] - 1;
        END IF;
        IF c.concurrency_key IS NOT NULL THEN
            v_i := array_position(v_ck, c.concurrency_key::text);
            v_ck_room[v_i] := v_ck_room[v_i] - 1;
            v_ck_used[v_i] := true;
        END IF;
        IF c.rate_key IS NOT NULL THEN
            v_i := array_position(v_rk, c.rate_key::text);
            v_rk_tokens[v_i] := v_rk_tokens[v_i] - 1;
        END IF;
    END LOOP;

    -- The buckets this call holds, as of now; the rotation stamps of the keys it served.
    IF cardinality(v_rk) > 0 THEN
        UPDATE taskforge.rate_limits r
           SET tokens = greatest(0, k.tokens), refilled_at = v_now
          FROM unnest(v_rk, v_rk_tokens) AS k(rate_key, tokens)
         WHERE r.rate_key = k.rate_key AND k.tokens IS NOT NULL;
    END IF;
    IF true = ANY (v_ck_used) THEN
        UPDATE taskforge.concurrency_keys k
           SET last_claimed_at = v_now
          FROM unnest(v_ck, v_ck_held, v_ck_used) AS u(concurrency_key, held, used)
         WHERE k.concurrency_key = u.concurrency_key AND u.held AND u.used;
    END IF;
    RETURN v_taken;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_claim_keyed(uuid, text[], text[], int, timestamptz, bigint[], text[], int[]) IS
    'Private: the keyed pick of a claim (rate, concurrency and ordering keys, fair rotation across concurrency keys); returns the locked ids for taskforge._tf_turn.';
REVOKE ALL ON FUNCTION taskforge._tf_claim_keyed(
    uuid, text[], text[], int, timestamptz, bigint[], text[], int[]
) FROM PUBLIC;
