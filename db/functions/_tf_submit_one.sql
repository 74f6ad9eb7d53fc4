-- taskforge._tf_submit_one(task_type text, payload jsonb, queue text, priority numeric,
--     max_attempts numeric, scheduled_at timestamptz, idempotency_key text, now timestamptz,
--     argument_prefix text, validate_only boolean DEFAULT false,
--     timeout_seconds double precision DEFAULT NULL, delay_seconds double precision DEFAULT NULL,
--     notify_finished boolean DEFAULT false, traceparent text DEFAULT NULL,
--     depends_on bigint[] DEFAULT NULL, rate_key text DEFAULT NULL,
--     concurrency_key text DEFAULT NULL, ordering_key text DEFAULT NULL)
--   -> (task_id bigint, state text, created boolean, due_now boolean)   (private helper)
--
-- Purpose:    the per-request core of tf_submit, tf_submit_many and tf_enqueue_periodic
--             (and the validation of tf_schedule_periodic): validate one request,
--             then insert it or resolve its idempotency key. The rules (validation, key
--             reservation, fingerprint, replay, TF409) are tf_submit's; see its header.
--             The new task takes timeout_seconds when given, else its type's timeout_seconds
--             (the attempt deadline) as it is now; its scheduled_at is scheduled_at, else
--             now + delay_seconds, else now. With depends_on it starts BLOCKED while a parent
--             is not SUCCEEDED (parents_pending counts them), QUEUED when all are, and
--             CANCELLED (cancel_reason 'dependency_failed', no attempt) when one is FAILED or
--             CANCELLED already; the edges go into taskforge.task_dependencies and each parent
--             is marked has_children, so its terminal transition releases or cancels the child
--             (taskforge._tf_release_children).
-- Parameters: task_type .. idempotency_key  one request, as tf_submit receives it.
--             now              the caller's clock_timestamp(): created_at, updated_at and the
--                              schedule when scheduled_at is NULL (now + delay_seconds with a
--                              delay).
--             argument_prefix  put before every argument name in TF400/TF409 messages and
--                              COLUMN: '' for tf_submit, 'requests[3].' for tf_submit_many.
--             validate_only    true: stop after the validation and return NULLs (created =
--                              false); tf_schedule_periodic checks the request a schedule will
--                              submit with exactly these rules.
--             timeout_seconds  this task's attempt timeout, 0 < s <= 604800, or NULL for its
--                              type's (part of the fingerprint when given).
--             delay_seconds, notify_finished, traceparent
--                              as tf_submit's (its header has the rules: at most one of
--                              scheduled_at and delay_seconds, the delay as given in the
--                              fingerprint, the other two outside it).
--             depends_on       parent task ids (resolved: tf_submit_many turns positions into
--                              ids first), a one-dimensional array of at most 1000, no NULL
--                              element; duplicates count once.
--                              NULL or empty: none. In the fingerprint (sorted, distinct).
--             rate_key, concurrency_key, ordering_key
--                              flow-control keys (docs/flow-control.md), 1..200 characters or
--                              NULL; in the fingerprint when given. An ordering key's row in
--                              taskforge.ordering_keys is locked until the caller commits, so
--                              the submits of one key commit in task id order.
-- Returns:    the task id, its current state, whether this call created it, and due_now:
--             created and scheduled at or before now. Sends no NOTIFY: the caller does, for
--             the requests that are due_now.
-- Errors:     TF400 '<prefix><argument>: <problem>'; TF409 '<prefix>idempotency_key: ...';
--             TF404 '<prefix>depends_on: task N does not exist'; XX000 when a key's row names a
--             task that does not exist (a row deleted outside the tf_* functions).
-- Locks:      inserts one tasks row (and with a key one taskforge.idempotency_keys row first);
--             on a key conflict waits for the competing inserter. With
--             depends_on, the parents' rows (FOR NO KEY UPDATE, in id order: a parent ending
--             at the same time waits, or is waited for, so no release is missed); with an
--             ordering key, its taskforge.ordering_keys row (FOR UPDATE).
-- Clock:      none of its own (uses now).
-- By hand:    no; call tf_submit.
CREATE OR REPLACE FUNCTION taskforge._tf_submit_one(
    task_type text,
    payload jsonb,
    queue text,
    priority numeric,
    max_attempts numeric,
    scheduled_at timestamptz,
    idempotency_key text,
    now timestamptz,
    argument_prefix text,
    validate_only boolean DEFAULT false,
    timeout_seconds double precision DEFAULT NULL,
    delay_seconds double precision DEFAULT NULL,
    notify_finished boolean DEFAULT false,
    traceparent text DEFAULT NULL,
    depends_on bigint[] DEFAULT NULL,
    rate_key text DEFAULT NULL,
    concurrency_key text DEFAULT NULL,
    ordering_key text DEFAULT NULL,
    OUT task_id bigint,
    OUT state text,
    OUT created boolean,
    OUT due_now boolean)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c_max_payload_bytes constant int := 1048576;
    p constant text := _tf_submit_one.argument_prefix;
    v_fingerprint bytea;
    v_stored bytea;
    v_type_found boolean;
    v_timeout double precision;
    v_scheduled_at timestamptz;
    v_payload_bytes int;
    v_parents bigint[];
    v_flow jsonb;
    v_state text := 'QUEUED';
    v_pending int := 0;
    v_failed int := 0;
    v_found int;
    v_missing bigint;
    v_locked boolean := false;
    v_new_id bigint;
    v_retried boolean := false;
BEGIN
    -- Validation: every argument, before anything is written.
    IF _tf_submit_one.task_type IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'task_type', 'must not be NULL');
    END IF;
    -- The type must be registered; its attempt timeout is copied to the task.
    SELECT true, tt.timeout_seconds INTO v_type_found, v_timeout
      FROM taskforge.task_types tt WHERE tt.task_type = _tf_submit_one.task_type;
    IF v_type_found IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'task_type', format('unknown task type %s (register it with tf_register_task_type)',
            quote_literal(left(_tf_submit_one.task_type, 100))));
    END IF;
    IF _tf_submit_one.payload IS NULL OR jsonb_typeof(_tf_submit_one.payload) <> 'object' THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be a JSON object, got %s',
            coalesce(jsonb_typeof(_tf_submit_one.payload), 'NULL')));
    END IF;
    -- Size before rendering: pg_column_size reads the jsonb value's own length. jsonb takes at
    -- most about 4 bytes per byte of JSON text (an array of 0s), so a value over 8 times the cap
    -- is too long as text: refused without rendering it. The sizes go to _tf_invalid as numbers:
    -- a statement naming the payload would copy it (issue 10 item 2, docs/sql-api.md).
    v_payload_bytes := pg_column_size(_tf_submit_one.payload);
    IF v_payload_bytes > 8 * c_max_payload_bytes THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be at most %s bytes as JSON text, got a jsonb value of %s bytes',
            c_max_payload_bytes, v_payload_bytes));
    END IF;
    v_payload_bytes := octet_length(_tf_submit_one.payload::text);
    IF v_payload_bytes > c_max_payload_bytes THEN
        PERFORM taskforge._tf_invalid(p || 'payload', format('must be at most %s bytes as JSON text, got %s',
            c_max_payload_bytes, v_payload_bytes));
    END IF;
    -- Nesting depth (the limit lives in taskforge._tf_json_too_deep; see tf_submit's header).
    IF taskforge._tf_json_too_deep(_tf_submit_one.payload) THEN
        PERFORM taskforge._tf_invalid(p || 'payload', 'must be nested at most 100 levels deep (objects and arrays, the payload itself counting as 1), got more');
    END IF;
    IF _tf_submit_one.queue IS NULL OR _tf_submit_one.queue !~ taskforge._tf_name_pattern('queue') THEN
        PERFORM taskforge._tf_check_name(p || 'queue', _tf_submit_one.queue, 'queue');
    END IF;
    -- The bounds are tested inline first: a call per check costs more than the check (batches).
    IF _tf_submit_one.priority IS NULL OR _tf_submit_one.priority NOT BETWEEN -32768 AND 32767
       OR _tf_submit_one.priority <> trunc(_tf_submit_one.priority) THEN
        PERFORM taskforge._tf_check_int(p || 'priority', _tf_submit_one.priority, -32768, 32767);
    END IF;
    IF _tf_submit_one.max_attempts IS NULL OR _tf_submit_one.max_attempts NOT BETWEEN 1 AND 1000
       OR _tf_submit_one.max_attempts <> trunc(_tf_submit_one.max_attempts) THEN
        PERFORM taskforge._tf_check_int(p || 'max_attempts', _tf_submit_one.max_attempts, 1, 1000);
    END IF;
    IF _tf_submit_one.scheduled_at IN ('infinity'::timestamptz, '-infinity'::timestamptz) THEN
        PERFORM taskforge._tf_invalid(p || 'scheduled_at', 'must be a finite timestamp or NULL');
    END IF;
    IF _tf_submit_one.idempotency_key IS NOT NULL AND length(_tf_submit_one.idempotency_key) NOT BETWEEN 1 AND 200 THEN
        PERFORM taskforge._tf_invalid(p || 'idempotency_key', format('must be 1 to 200 characters, got %s',
            length(_tf_submit_one.idempotency_key)));
    END IF;
    IF _tf_submit_one.timeout_seconds IS NOT NULL THEN
        PERFORM taskforge._tf_check_seconds(p || 'timeout_seconds', _tf_submit_one.timeout_seconds, 0, 604800, true);
        v_timeout := _tf_submit_one.timeout_seconds;
    END IF;
    v_scheduled_at := coalesce(_tf_submit_one.scheduled_at, _tf_submit_one.now);
    IF _tf_submit_one.delay_seconds IS NOT NULL THEN
        IF _tf_submit_one.scheduled_at IS NOT NULL THEN
            PERFORM taskforge._tf_invalid(p || 'delay_seconds', 'give at most one of scheduled_at and delay_seconds');
        END IF;
        -- At most 100 years of 365.25 days.
        PERFORM taskforge._tf_check_seconds(p || 'delay_seconds', _tf_submit_one.delay_seconds, 0, 3155760000);
        v_scheduled_at := _tf_submit_one.now + make_interval(secs => _tf_submit_one.delay_seconds);
    END IF;
    IF _tf_submit_one.notify_finished IS NULL THEN
        PERFORM taskforge._tf_invalid(p || 'notify_finished', 'must be true or false, got NULL');
    END IF;
    IF NOT taskforge._tf_traceparent_ok(_tf_submit_one.traceparent) THEN
        PERFORM taskforge._tf_invalid(p || 'traceparent', format('must be a W3C trace context traceparent: '
            || 'version-trace_id-parent_id-flags as 2, 32, 16 and 2 lower-case hex digits, the version not ff, '
            || 'neither id all zeros (e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01), got %s',
            quote_literal(left(_tf_submit_one.traceparent, 100))));
    END IF;
    IF cardinality(_tf_submit_one.depends_on) > 0 THEN
        -- Before array_position, which refuses a multidimensional array with 0A000.
        IF array_ndims(_tf_submit_one.depends_on) > 1 THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must be a one-dimensional array, got %s dimensions',
                array_ndims(_tf_submit_one.depends_on)));
        END IF;
        IF array_position(_tf_submit_one.depends_on, NULL) IS NOT NULL THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must not contain NULL (element %s is NULL)',
                array_position(_tf_submit_one.depends_on, NULL) - 1));
        END IF;
        v_parents := ARRAY(SELECT DISTINCT d FROM unnest(_tf_submit_one.depends_on) AS d ORDER BY d);
        IF cardinality(v_parents) > 1000 THEN
            PERFORM taskforge._tf_invalid(p || 'depends_on', format('must name at most 1000 parent tasks, got %s',
                cardinality(v_parents)));
        END IF;
    END IF;
    IF coalesce(_tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key) IS NOT NULL THEN
        PERFORM taskforge._tf_check_flow_key(p || 'rate_key', _tf_submit_one.rate_key),
                taskforge._tf_check_flow_key(p || 'concurrency_key', _tf_submit_one.concurrency_key),
                taskforge._tf_check_flow_key(p || 'ordering_key', _tf_submit_one.ordering_key);
    END IF;
    IF _tf_submit_one.validate_only THEN
        _tf_submit_one.created := false;
        _tf_submit_one.due_now := false;
        RETURN;
    END IF;

    IF v_parents IS NOT NULL OR _tf_submit_one.rate_key IS NOT NULL OR _tf_submit_one.concurrency_key IS NOT NULL
       OR _tf_submit_one.ordering_key IS NOT NULL THEN
        v_flow := jsonb_strip_nulls(jsonb_build_object(
            'depends_on', to_jsonb(v_parents), 'rate_key', _tf_submit_one.rate_key,
            'concurrency_key', _tf_submit_one.concurrency_key, 'ordering_key', _tf_submit_one.ordering_key));
    END IF;
    IF _tf_submit_one.idempotency_key IS NOT NULL THEN
        v_fingerprint := taskforge._tf_fingerprint(_tf_submit_one.task_type, _tf_submit_one.payload, _tf_submit_one.queue,
            _tf_submit_one.priority::int, _tf_submit_one.max_attempts::int, _tf_submit_one.scheduled_at,
            _tf_submit_one.timeout_seconds, _tf_submit_one.delay_seconds, v_flow);
    END IF;

    LOOP
        IF NOT v_locked THEN
            -- The parents, locked in id order; their states as now committed decide the start.
            IF v_parents IS NOT NULL THEN
                SELECT count(*), count(*) FILTER (WHERE l.state <> 'SUCCEEDED'),
                       count(*) FILTER (WHERE l.state IN ('FAILED', 'CANCELLED'))
                  INTO v_found, v_pending, v_failed
                  FROM (SELECT t.task_id, t.state FROM taskforge.tasks t
                         WHERE t.task_id = ANY (v_parents) ORDER BY t.task_id FOR NO KEY UPDATE) AS l;
                IF v_found < cardinality(v_parents) THEN
                    SELECT min(d) INTO v_missing FROM unnest(v_parents) AS d
                     WHERE NOT EXISTS (SELECT 1 FROM taskforge.tasks t WHERE t.task_id = d);
                    RAISE EXCEPTION USING ERRCODE = 'TF404',
                        MESSAGE = format('%sdepends_on: task %s does not exist', p, v_missing),
                        COLUMN = p || 'depends_on';
                END IF;
                UPDATE taskforge.tasks t SET has_children = true
                 WHERE t.task_id = ANY (v_parents) AND NOT t.has_children;
                v_state := CASE WHEN v_failed > 0 THEN 'CANCELLED' WHEN v_pending > 0 THEN 'BLOCKED' ELSE 'QUEUED' END;
            END IF;
            IF _tf_submit_one.ordering_key IS NOT NULL THEN
                INSERT INTO taskforge.ordering_keys AS o (ordering_key, created_at)
                VALUES (_tf_submit_one.ordering_key, _tf_submit_one.now)
                ON CONFLICT (ordering_key) DO NOTHING;
                PERFORM 1 FROM taskforge.ordering_keys o WHERE o.ordering_key = _tf_submit_one.ordering_key FOR UPDATE;
            END IF;
            IF _tf_submit_one.concurrency_key IS NOT NULL THEN
                INSERT INTO taskforge.concurrency_keys AS c (concurrency_key, created_at, updated_at)
                VALUES (_tf_submit_one.concurrency_key, _tf_submit_one.now, _tf_submit_one.now)
                ON CONFLICT (concurrency_key) DO NOTHING;
            END IF;
            v_locked := true;
        END IF;

        -- A key first: its row reserves it (the insert waits for a competing inserter of the
        -- same key and does nothing when the key is taken); the task takes the id drawn here.
        -- tasks is locked (as its INSERT below would) before the id is drawn: on the
        -- partitioned history a range is dropped only once every id in it is drawn, under a
        -- lock that waits for this transaction, so it sees this task (_tf_drop_partitions).
        IF _tf_submit_one.idempotency_key IS NOT NULL THEN
            LOCK TABLE taskforge.tasks IN ROW EXCLUSIVE MODE;
            INSERT INTO taskforge.idempotency_keys AS k (idempotency_key, task_id)
            VALUES (_tf_submit_one.idempotency_key, nextval('taskforge.tasks_task_id_seq'))
            ON CONFLICT (idempotency_key) DO NOTHING
            RETURNING k.task_id INTO v_new_id;
            IF v_new_id IS NULL THEN
                -- Taken by a committed task (or an earlier request of this transaction): a
                -- replay or a conflict.
                SELECT t.task_id, t.state, t.fingerprint INTO _tf_submit_one.task_id, _tf_submit_one.state, v_stored
                  FROM taskforge.idempotency_keys k JOIN taskforge.tasks t ON t.task_id = k.task_id
                 WHERE k.idempotency_key = _tf_submit_one.idempotency_key;
                IF FOUND THEN
                    IF v_stored IS DISTINCT FROM v_fingerprint THEN
                        RAISE EXCEPTION USING ERRCODE = 'TF409',
                            MESSAGE = format('%sidempotency_key: %s is already used by task %s with a different request',
                                p, quote_literal(left(_tf_submit_one.idempotency_key, 100)), _tf_submit_one.task_id),
                            COLUMN = p || 'idempotency_key',
                            HINT = 'Reuse a key only for exactly the same task_type, payload, queue, priority, max_attempts, '
                                || 'scheduled_at or delay_seconds, timeout_seconds, depends_on and flow keys.';
                    END IF;
                    _tf_submit_one.created := false;
                    _tf_submit_one.due_now := false;
                    RETURN;
                END IF;
                -- The holder was deleted (tf_prune) between our insert and our read: try again,
                -- once; a key row without its task after that is a broken invariant, not a race.
                IF v_retried THEN
                    PERFORM taskforge._tf_broken_invariant(format(
                        'idempotency key %s names task %s, which does not exist (tf_invariant_violations)',
                        quote_literal(left(_tf_submit_one.idempotency_key, 100)),
                        (SELECT k.task_id FROM taskforge.idempotency_keys k
                          WHERE k.idempotency_key = _tf_submit_one.idempotency_key)));
                END IF;
                v_retried := true;
                CONTINUE;
            END IF;
        END IF;

        INSERT INTO taskforge.tasks AS t
               (task_id, task_type, payload, queue, priority, max_attempts, state, scheduled_at,
                idempotency_key, fingerprint, timeout_seconds, notify_finished, traceparent,
                parents_pending, rate_key, concurrency_key, ordering_key, keyed,
                cancel_requested_at, cancel_reason, finished_at, created_at, updated_at)
        OVERRIDING SYSTEM VALUE
        VALUES (coalesce(v_new_id, nextval('taskforge.tasks_task_id_seq')), _tf_submit_one.task_type,
                _tf_submit_one.payload, _tf_submit_one.queue, _tf_submit_one.priority, _tf_submit_one.max_attempts, v_state, v_scheduled_at,
                _tf_submit_one.idempotency_key, v_fingerprint, v_timeout, _tf_submit_one.notify_finished,
                _tf_submit_one.traceparent, CASE WHEN v_state = 'BLOCKED' THEN v_pending ELSE 0 END,
                _tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key,
                coalesce(_tf_submit_one.rate_key, _tf_submit_one.concurrency_key, _tf_submit_one.ordering_key) IS NOT NULL,
                CASE WHEN v_state = 'CANCELLED' THEN _tf_submit_one.now END,
                CASE WHEN v_state = 'CANCELLED' THEN 'dependency_failed' END,
                CASE WHEN v_state = 'CANCELLED' THEN _tf_submit_one.now END,
                _tf_submit_one.now, _tf_submit_one.now)
        RETURNING t.task_id INTO _tf_submit_one.task_id;

        IF v_parents IS NOT NULL THEN
            INSERT INTO taskforge.task_dependencies (child_task_id, parent_task_id)
            SELECT _tf_submit_one.task_id, d FROM unnest(v_parents) AS d;
        END IF;
        _tf_submit_one.state := v_state;
        _tf_submit_one.created := true;
        _tf_submit_one.due_now := v_state = 'QUEUED' AND v_scheduled_at <= _tf_submit_one.now;
        RETURN;
    END LOOP;
END;
$fn$;

COMMENT ON FUNCTION taskforge._tf_submit_one(text, jsonb, text, numeric, numeric, timestamptz, text, timestamptz, text, boolean, double precision, double precision, boolean, text, bigint[], text, text, text) IS
    'Private: the per-request core of tf_submit, tf_submit_many and tf_enqueue_periodic (validate, insert or resolve the idempotency key; validate only for tf_schedule_periodic). No NOTIFY. Errors: TF400, TF409 with the argument prefixed.';
REVOKE ALL ON FUNCTION taskforge._tf_submit_one(
    text, jsonb, text, numeric, numeric, timestamptz, text, timestamptz, text, boolean, double precision,
    double precision, boolean, text, bigint[], text, text, text
) FROM PUBLIC;
