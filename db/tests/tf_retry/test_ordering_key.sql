-- tf_retry of a task with an ordering key while a later task of its key is RUNNING is refused (TF409 COLUMN task_id naming the running task; nothing changes), so the redriven task, the key's head again, never runs beside it; once that one has ended the retry goes through and the next claim takes the redriven task.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-ordering-w1') AS id;
CREATE TEMP TABLE s AS
SELECT n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', n), 'retry_ordering_q',
                                                  max_attempts => 1, ordering_key => 'retry-ordering-k')) AS task_id
  FROM generate_series(1, 2) n;
CREATE FUNCTION pg_temp.id(p_n int) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM s WHERE n = p_n $helper$;
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_column text; v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_column = COLUMN_NAME, v_message = MESSAGE_TEXT;
        RETURN v_state || ' ' || coalesce(v_column, 'NULL') || ': ' || v_message;
    END;
    RETURN 'no error';
END;
$helper$;
-- Task 1 runs and fails for good; task 2, the head now, starts.
CREATE TEMP TABLE c1 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_ordering_q']);
SELECT is((SELECT task_id FROM c1), pg_temp.id(1), 'the head of the key is claimed first');
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(1), (SELECT id FROM w), 1, 'failed');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_ordering_q']);
SELECT is((SELECT task_id FROM c2), pg_temp.id(2), 'after its failure the next task of the key starts');
SELECT is(pg_temp.refusal(format('SELECT * FROM taskforge.tf_retry(%s)', pg_temp.id(1))),
          format('TF409 task_id: task_id: task %s of the same ordering key ''retry-ordering-k'' is RUNNING; retry task %s once it has ended',
                 pg_temp.id(2), pg_temp.id(1)),
          'the retry is refused while a task of the key runs');
SELECT is((SELECT state::text FROM taskforge.tasks WHERE task_id = pg_temp.id(1)), 'FAILED', 'the refused retry changed nothing');
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize(pg_temp.id(2), (SELECT id FROM w), 1, 'succeeded');
SELECT is((SELECT task_state FROM taskforge.tf_retry(pg_temp.id(1))), 'QUEUED', 'once the running task ended, the retry goes through');
CREATE TEMP TABLE c3 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_ordering_q']);
SELECT is((SELECT task_id FROM c3), pg_temp.id(1), 'the redriven task is claimed');
SELECT is_empty($$SELECT * FROM taskforge.tf_invariant_violations$$, 'no invariant is broken');
SELECT * FROM finish();
ROLLBACK;
