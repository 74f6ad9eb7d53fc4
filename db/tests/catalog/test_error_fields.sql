-- Catalog contract (docs/sql-api.md#errors): every refusal (TF400, TF404, TF409) carries the argument it is about in the error's COLUMN field, and its message starts with that same text and ': ', so that a client reads the argument (psycopg: exc.diag.column_name) instead of parsing the message. Batch element errors name the element: requests[3].priority.
BEGIN;
SELECT plan(16);
-- refusal(sql): 'SQLSTATE COLUMN', or a description of what went wrong instead.
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_message text; v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_column = COLUMN_NAME;
        IF v_column IS NULL OR NOT starts_with(v_message, v_column || ': ') THEN
            RETURN format('%s without a matching COLUMN (%s): %s', v_state, coalesce(v_column, 'NULL'), v_message);
        END IF;
        RETURN v_state || ' ' || v_column;
    END;
    RETURN 'no error';
END;
$helper$;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_error_fields') AS id;
CREATE TEMP TABLE gone AS SELECT taskforge.tf_register_worker('w_error_fields_gone') AS id;
CREATE TEMP TABLE gone_done AS SELECT taskforge.tf_deregister_worker((SELECT id FROM gone)) IS NULL AS done;
CREATE TEMP TABLE queued AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_error_fields', idempotency_key => 'error-fields-k');
DO $$ BEGIN
    PERFORM set_config('tftest.worker_id', (SELECT id FROM w)::text, true);
    PERFORM set_config('tftest.gone_id', (SELECT id FROM gone)::text, true);
    PERFORM set_config('tftest.task_id', (SELECT task_id FROM queued)::text, true);
END $$;

-- TF400
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', priority => 40000)$$), 'TF400 priority', 'tf_submit: COLUMN priority');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', delay_seconds => 1, scheduled_at => now())$$), 'TF400 delay_seconds',
    'tf_submit: COLUMN delay_seconds');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}, {"task_type": "noop"}, {"task_type": "noop"},
                                                                      {"task_type": "noop", "priority": 40000}]')$$),
    'TF400 requests[3].priority', 'tf_submit_many: COLUMN requests[3].priority, as the message starts');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}, "x"]')$$), 'TF400 requests[1]',
    'tf_submit_many: a bad element is COLUMN requests[1]');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit_many('[]')$$), 'TF400 requests', 'tf_submit_many: the array is COLUMN requests');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_claim(current_setting('tftest.worker_id')::uuid, max_tasks => 0)$$),
    'TF400 max_tasks', 'tf_claim: COLUMN max_tasks');
-- TF404
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_cancel(9223372036854775807)$$), 'TF404 task_id', 'tf_cancel of no task: COLUMN task_id');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_retry(9223372036854775807)$$), 'TF404 task_id', 'tf_retry of no task: COLUMN task_id');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_finalize(9223372036854775807, current_setting('tftest.worker_id')::uuid, 1, 'succeeded')$$),
    'TF404 task_id', 'tf_finalize of no task: COLUMN task_id');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_claim(current_setting('tftest.gone_id')::uuid)$$), 'TF404 worker_id',
    'tf_claim by a deregistered worker: COLUMN worker_id');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_heartbeat(gen_random_uuid())$$), 'TF404 worker_id', 'tf_heartbeat of no worker: COLUMN worker_id');
SELECT is(pg_temp.refusal($$SELECT taskforge.tf_deregister_worker(gen_random_uuid())$$), 'TF404 worker_id',
    'tf_deregister_worker of no worker: COLUMN worker_id');
-- TF409
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', '{"other": 1}', 'q_error_fields', idempotency_key => 'error-fields-k')$$),
    'TF409 idempotency_key', 'tf_submit with a key reused for another request: COLUMN idempotency_key');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit_many('[{"task_type": "noop"}, {"task_type": "noop", "idempotency_key": "error-fields-k"}]')$$),
    'TF409 requests[1].idempotency_key', 'tf_submit_many: COLUMN requests[1].idempotency_key');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_retry(current_setting('tftest.task_id')::bigint)$$), 'TF409 task_id',
    'tf_retry of a QUEUED task: COLUMN task_id');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
