-- taskforge.tf_submit_many(requests jsonb)
--   -> TABLE(task_id bigint, state text, created boolean)
--
-- Purpose:    the batch form of tf_submit: admit 1..10000 tasks in one call and one commit.
--             Each element obeys exactly tf_submit's rules (validation, idempotency key,
--             fingerprint, replay, TF409): both run the same per-request core,
--             taskforge._tf_submit_one.
-- Parameters: requests  a JSON array of 1..10000 request objects. Each object has the keys of
--             tf_submit's parameters; an omitted key takes tf_submit's default, JSON null is
--             SQL NULL (so "priority": null is TF400, as in tf_submit), any other key is TF400:
--               task_type        string (required).
--               payload          a JSON object, at most 1 MiB as JSON text and 100 levels deep
--                                (as tf_submit); default {}.
--               queue            string; default 'default'.
--               priority         a JSON number, checked as tf_submit's (whole, -32768..32767);
--                                default 0.
--               max_attempts     a JSON number, checked as tf_submit's (whole, 1..1000); default 3.
--               scheduled_at     an ISO 8601 timestamp string with a UTC offset
--                                ('2031-03-04T05:06:07Z', '...+02:00'), or null for now.
--                                A string without an offset is refused: it would be read in
--                                the session's TimeZone.
--               idempotency_key  string or null.
--               timeout_seconds  a JSON number (seconds, 0 < s <= 604800) or null for the task
--                                type's timeout.
--               delay_seconds    a JSON number (seconds, 0 <= s <= 3155760000) or null for
--                                none: scheduled at the call's clock_timestamp() + delay. An
--                                element giving both a scheduled_at string and a delay is TF400
--                                'requests[i].delay_seconds'. In the fingerprint as given.
--               notify_finished  a JSON boolean; default false (null is TF400, as NULL in
--                                tf_submit). Not in the fingerprint.
--               traceparent      a W3C traceparent string (tf_submit's rule) or null. Not in
--                                the fingerprint.
--               depends_on       a JSON array of parent task ids (whole JSON numbers) or null.
--               depends_on_positions
--                                a JSON array of 0-based positions of EARLIER elements of this
--                                call (a position >= the element's own is TF400), or null: their
--                                tasks are parents too, so a whole graph is submitted in one call
--                                and one transaction. Both lists together obey tf_submit's
--                                depends_on rules (at most 1000, the fingerprint covers the
--                                resolved ids: a replayed graph resolves to the same ids).
--               rate_key, concurrency_key, ordering_key
--                                strings or null (tf_submit's rules).
--             Why one jsonb array and not parallel arrays: a request keeps its keys together
--             (no eleven arrays to keep aligned), an element can omit a key and get tf_submit's
--             default, the JSON-lines file of `taskforge submit --from-file` maps one to one,
--             and every client language can build it.
-- Returns:    one row per element, in input order: the task id, its current state, and
--             whether this call created it. An element repeating an earlier element's
--             idempotency key (same request) resolves to that same task with created = false.
-- Errors:     TF400 naming the element (0-based, as in the JSON array) and argument, e.g.
--             'requests[3].priority: must be between -32768 and 32767, got 40000', or
--             'requests[3]: ...' for the element's shape, 'requests: ...' for the array itself;
--             TF409 'requests[3].idempotency_key: ...' for a key reused with a different request
--             (also by an earlier element of the same call). The COLUMN field of each error is
--             the text before the colon ('requests[3].priority'), so a client reads the element
--             and key from the error's fields, not its message. Nothing is written when an error is raised. Under REPEATABLE READ or
--             SERIALIZABLE a concurrent submit with the same key can raise 40001: retry.
-- Locks:      inserts one tasks row per created element; on a key conflict waits for the
--             competing inserter. Two batches sharing keys in opposite orders can deadlock
--             (40P01, one is rolled back): retry, or sort keyed requests by key.
-- Notify:     pg_notify('taskforge', queue) once per distinct queue that received a task due
--             now (delivered on commit); later, as tf_submit, taskforge_finished for the tasks
--             of elements with notify_finished.
-- Clock:      clock_timestamp() once per call: created_at, the default schedule and the base of
--             delay_seconds of every element.
-- By hand:    yes; the public way to create much work at once.
CREATE OR REPLACE FUNCTION taskforge.tf_submit_many(requests jsonb)
RETURNS TABLE(task_id bigint, state text, created boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    c_max_requests constant int := 10000;
    c_keys constant text[] := ARRAY['task_type', 'payload', 'queue', 'priority', 'max_attempts', 'scheduled_at',
                                    'idempotency_key', 'timeout_seconds', 'delay_seconds', 'notify_finished',
                                    'traceparent', 'depends_on', 'depends_on_positions', 'rate_key',
                                    'concurrency_key', 'ordering_key'];
    v_now timestamptz := clock_timestamp();
    v_count int;
    v_request jsonb;
    v_index int;
    v_prefix text;
    v_key text;
    v_value jsonb;
    v_nums numeric[];
    v_timeout double precision;
    v_delay double precision;
    v_timeout_or_delay double precision;
    v_notify boolean;
    v_scheduled_at timestamptz;
    v_queue text;
    v_due_queues text[] := '{}';
    v_ids bigint[] := '{}';
    v_parents bigint[];
    v_list text;
    v_elem jsonb;
    v_pos int;
    r record;
BEGIN
    IF tf_submit_many.requests IS NULL OR jsonb_typeof(tf_submit_many.requests) <> 'array' THEN
        PERFORM taskforge._tf_invalid('requests', format('must be a JSON array of request objects, got %s',
            coalesce(jsonb_typeof(tf_submit_many.requests), 'NULL')));
    END IF;
    v_count := jsonb_array_length(tf_submit_many.requests);
    IF v_count NOT BETWEEN 1 AND c_max_requests THEN
        PERFORM taskforge._tf_invalid('requests', format('must have 1 to %s elements, got %s', c_max_requests, v_count));
    END IF;

    FOR v_index IN 0 .. v_count - 1 LOOP
        v_request := tf_submit_many.requests -> v_index;
        v_prefix := 'requests[' || v_index || '].';
        -- The shape of the element; the values are checked by the shared core.
        IF jsonb_typeof(v_request) <> 'object' THEN
            PERFORM taskforge._tf_invalid(format('requests[%s]', v_index),
                format('must be a JSON object, got %s', jsonb_typeof(v_request)));
        END IF;
        IF v_request - c_keys <> '{}'::jsonb THEN
            SELECT k INTO v_key FROM jsonb_object_keys(v_request - c_keys) AS k LIMIT 1;
            PERFORM taskforge._tf_invalid(format('requests[%s]', v_index), format('unknown key %s (known: %s)',
                quote_literal(left(v_key, 100)), array_to_string(c_keys, ', ')));
        END IF;
        IF jsonb_typeof(v_request -> 'task_type') <> 'string' OR jsonb_typeof(v_request -> 'queue') <> 'string'
           OR jsonb_typeof(v_request -> 'idempotency_key') <> 'string'
           OR jsonb_typeof(v_request -> 'scheduled_at') <> 'string'
           OR jsonb_typeof(v_request -> 'traceparent') <> 'string' OR jsonb_typeof(v_request -> 'rate_key') <> 'string'
           OR jsonb_typeof(v_request -> 'concurrency_key') <> 'string'
           OR jsonb_typeof(v_request -> 'ordering_key') <> 'string' THEN
            FOREACH v_key IN ARRAY ARRAY['task_type', 'queue', 'idempotency_key', 'scheduled_at', 'traceparent',
                                         'rate_key', 'concurrency_key', 'ordering_key'] LOOP
                IF jsonb_typeof(v_request -> v_key) NOT IN ('string', 'null') THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_key, format('must be a JSON string or null, got %s',
                        jsonb_typeof(v_request -> v_key)));
                END IF;
            END LOOP;
        END IF;
        v_nums := ARRAY[0, 3];  -- tf_submit's defaults for priority and max_attempts
        v_timeout := NULL;      -- and for timeout_seconds (the task type's)
        v_delay := NULL;        -- and for delay_seconds (none)
        IF v_request ? 'priority' OR v_request ? 'max_attempts' OR v_request ? 'timeout_seconds'
           OR v_request ? 'delay_seconds' THEN
            FOREACH v_key IN ARRAY ARRAY['priority', 'max_attempts', 'timeout_seconds', 'delay_seconds'] LOOP
                v_value := v_request -> v_key;
                IF v_value IS NULL OR jsonb_typeof(v_value) = 'null' THEN
                    -- omitted: the default; JSON null: SQL NULL (tf_submit refuses it for the
                    -- whole numbers; for timeout_seconds it means the type's, for delay_seconds none)
                    IF v_value IS NOT NULL AND v_key IN ('priority', 'max_attempts') THEN
                        v_nums[array_position(ARRAY['priority', 'max_attempts'], v_key)] := NULL;
                    END IF;
                ELSIF jsonb_typeof(v_value) <> 'number' THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_key, format('must be a JSON number, got %s',
                        left(v_value::text, 100)));
                ELSIF v_key IN ('timeout_seconds', 'delay_seconds') THEN
                    -- A JSON number beyond double precision becomes +/-Infinity: out of range below.
                    v_timeout_or_delay := CASE WHEN abs(v_value::numeric) > 1e300
                                               THEN sign(v_value::numeric)::float8 * 'Infinity'::float8
                                               ELSE v_value::numeric::float8 END;
                    IF v_key = 'timeout_seconds' THEN
                        v_timeout := v_timeout_or_delay;
                    ELSE
                        v_delay := v_timeout_or_delay;
                    END IF;
                ELSE
                    -- The range and whole-number checks are tf_submit's (taskforge._tf_submit_one).
                    v_nums[array_position(ARRAY['priority', 'max_attempts'], v_key)] := v_value::numeric;
                END IF;
            END LOOP;
        END IF;
        v_scheduled_at := NULL;
        IF jsonb_typeof(v_request -> 'scheduled_at') = 'string' THEN
            IF v_request ->> 'scheduled_at' !~* '^[0-9].*[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|[+-][0-9]{2}(:?[0-9]{2})?)$' THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'scheduled_at',
                    format('must be an ISO 8601 timestamp with a UTC offset (e.g. 2031-03-04T05:06:07Z), got %s',
                        quote_literal(left(v_request ->> 'scheduled_at', 100))));
            END IF;
            BEGIN
                v_scheduled_at := (v_request ->> 'scheduled_at')::timestamptz;
            EXCEPTION WHEN data_exception THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'scheduled_at',
                    format('must be an ISO 8601 timestamp with a UTC offset (e.g. 2031-03-04T05:06:07Z), got %s',
                        quote_literal(left(v_request ->> 'scheduled_at', 100))));
            END;
        END IF;

        v_notify := false;  -- tf_submit's default
        IF v_request ? 'notify_finished' THEN
            v_value := v_request -> 'notify_finished';
            IF jsonb_typeof(v_value) NOT IN ('boolean', 'null') THEN
                PERFORM taskforge._tf_invalid(v_prefix || 'notify_finished', format('must be a JSON boolean, got %s',
                    left(v_value::text, 100)));
            END IF;
            -- JSON null: SQL NULL, refused by the shared core as tf_submit refuses NULL.
            v_notify := CASE WHEN jsonb_typeof(v_value) = 'boolean' THEN v_value::boolean END;
        END IF;

        -- Parents: task ids, and positions of earlier elements turned into their task ids.
        v_parents := NULL;
        IF v_request ? 'depends_on' OR v_request ? 'depends_on_positions' THEN
            v_parents := '{}';
            FOREACH v_list IN ARRAY ARRAY['depends_on', 'depends_on_positions'] LOOP
                v_value := v_request -> v_list;
                CONTINUE WHEN v_value IS NULL OR jsonb_typeof(v_value) = 'null';
                IF jsonb_typeof(v_value) <> 'array' THEN
                    PERFORM taskforge._tf_invalid(v_prefix || v_list, format('must be a JSON array of whole numbers, got %s',
                        left(v_value::text, 100)));
                END IF;
                FOR v_pos IN 0 .. jsonb_array_length(v_value) - 1 LOOP
                    v_elem := v_value -> v_pos;
                    IF jsonb_typeof(v_elem) <> 'number' OR v_elem::numeric <> trunc(v_elem::numeric)
                       OR v_elem::numeric NOT BETWEEN 0 AND 9223372036854775807 THEN
                        PERFORM taskforge._tf_invalid(v_prefix || v_list, format('element %s must be a whole number >= 0, got %s',
                            v_pos, left(v_elem::text, 100)));
                    END IF;
                    IF v_list = 'depends_on' THEN
                        v_parents := v_parents || (v_elem::numeric)::bigint;
                    ELSIF v_elem::numeric >= v_index THEN
                        PERFORM taskforge._tf_invalid(v_prefix || v_list, format(
                            'element %s must be the position of an earlier element (%s), got %s', v_pos,
                            CASE WHEN v_index = 0 THEN 'none: this is the first' ELSE '0..' || (v_index - 1) END, v_elem));
                    ELSE
                        v_parents := v_parents || v_ids[(v_elem::numeric)::int + 1];
                    END IF;
                END LOOP;
            END LOOP;
        END IF;

        v_queue := CASE WHEN v_request ? 'queue' THEN v_request ->> 'queue' ELSE 'default' END;
        r := taskforge._tf_submit_one(v_request ->> 'task_type', coalesce(v_request -> 'payload', '{}'::jsonb),
                                      v_queue, v_nums[1], v_nums[2], v_scheduled_at, v_request ->> 'idempotency_key',
                                      v_now, v_prefix, timeout_seconds => v_timeout, delay_seconds => v_delay,
                                      notify_finished => v_notify, traceparent => v_request ->> 'traceparent',
                                      depends_on => v_parents, rate_key => v_request ->> 'rate_key',
                                      concurrency_key => v_request ->> 'concurrency_key',
                                      ordering_key => v_request ->> 'ordering_key');
        v_ids := v_ids || r.task_id;
        IF r.due_now AND v_queue <> ALL (v_due_queues) THEN
            v_due_queues := v_due_queues || v_queue;
        END IF;
        tf_submit_many.task_id := r.task_id;
        tf_submit_many.state := r.state;
        tf_submit_many.created := r.created;
        RETURN NEXT;
    END LOOP;

    PERFORM taskforge._tf_notify_queues(v_due_queues);
END;
$fn$;

COMMENT ON FUNCTION taskforge.tf_submit_many(jsonb) IS
    'Batch tf_submit: a JSON array of 1..10000 request objects (tf_submit''s parameter names as keys, delay_seconds, notify_finished, traceparent, depends_on and the flow keys included, plus depends_on_positions: earlier elements as parents), each under exactly tf_submit''s rules; one row per request in input order; one NOTIFY per queue with due work. Errors: TF400 naming requests[i].argument (also its COLUMN), TF409.';
REVOKE ALL ON FUNCTION taskforge.tf_submit_many(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION taskforge.tf_submit_many(jsonb) TO taskforge_client;
