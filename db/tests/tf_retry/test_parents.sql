-- tf_retry of a task with parents (depends_on): a parent FAILED or CANCELLED refuses it (TF409 COLUMN task_id naming the lowest such parent and its state; nothing changes); with a parent unfinished it goes back to BLOCKED counting them, and it is released by their success; with every parent SUCCEEDED it is QUEUED.
BEGIN;
SELECT plan(13);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('retry-parents-w1') AS id;
CREATE TEMP TABLE p AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('p', s.name), 'retry_parents_' || s.name)) AS task_id
  FROM (VALUES ('f'), ('x'), ('q'), ('s')) s(name);
CREATE FUNCTION pg_temp.id(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM p WHERE name = p_name $helper$;
-- f FAILED, x CANCELLED, q QUEUED, s SUCCEEDED.
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_parents_f', 'retry_parents_s'], max_tasks => 2);
CREATE TEMP TABLE fin AS
SELECT * FROM taskforge.tf_finalize(pg_temp.id('f'), (SELECT id FROM w), 1, 'failed')
UNION ALL
SELECT * FROM taskforge.tf_finalize(pg_temp.id('s'), (SELECT id FROM w), 1, 'succeeded');
CREATE TEMP TABLE k AS
SELECT s.name, r.task_id, r.state
  FROM (VALUES ('on_f', ARRAY['f', 'q']), ('on_x_f', ARRAY['x', 'f']), ('on_q_s', ARRAY['q', 's']), ('on_s', ARRAY['s'])) s(name, parents)
 CROSS JOIN LATERAL taskforge.tf_submit('noop', jsonb_build_object('k', s.name), 'retry_parents_child',
                                        depends_on => (SELECT array_agg(pg_temp.id(n)) FROM unnest(s.parents) n)) r;
CREATE TEMP TABLE xx AS SELECT * FROM taskforge.tf_cancel(pg_temp.id('x'));
-- The children of unfinished or succeeded parents are cancelled by hand.
CREATE TEMP TABLE xk AS
SELECT k.name, x.* FROM k CROSS JOIN LATERAL taskforge.tf_cancel(k.task_id, 'by hand') x WHERE k.name IN ('on_q_s', 'on_s');
CREATE FUNCTION pg_temp.kid(p_name text) RETURNS bigint LANGUAGE sql AS $helper$ SELECT task_id FROM k WHERE name = p_name $helper$;
-- refusal(sql): 'SQLSTATE COLUMN: message' of the error sql raises, or 'no error'.
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
SELECT results_eq($$SELECT k.name, t.state::text, t.cancel_reason FROM k JOIN taskforge.tasks t USING (task_id) ORDER BY k.name$$,
                  $$VALUES ('on_f'::text, 'CANCELLED'::text, 'dependency_failed'::text), ('on_q_s', 'CANCELLED', 'by hand'),
                           ('on_s', 'CANCELLED', 'by hand'), ('on_x_f', 'CANCELLED', 'dependency_failed')$$,
                  'setup: four CANCELLED children, two through a failed parent, two by hand');

-- A FAILED or CANCELLED parent: TF409 naming it.
SELECT is(pg_temp.refusal(format('SELECT * FROM taskforge.tf_retry(%s)', pg_temp.kid('on_f'))),
          format('TF409 task_id: task_id: task %s depends on task %s, which is FAILED; retry that one first', pg_temp.kid('on_f'), pg_temp.id('f')),
          'a child of a FAILED parent: TF409 naming the parent and its state');
SELECT is(pg_temp.refusal(format('SELECT * FROM taskforge.tf_retry(%s)', pg_temp.kid('on_x_f'))),
          format('TF409 task_id: task_id: task %s depends on task %s, which is %s; retry that one first', pg_temp.kid('on_x_f'),
                 least(pg_temp.id('f'), pg_temp.id('x')), CASE WHEN pg_temp.id('f') < pg_temp.id('x') THEN 'FAILED' ELSE 'CANCELLED' END),
          'two refusing parents (FAILED, CANCELLED): the lowest id is named');
SELECT results_eq($$SELECT t.state::text, t.cancel_reason, t.max_attempts::int, t.finished_at IS NOT NULL FROM taskforge.tasks t
                     WHERE t.task_id = pg_temp.kid('on_f')$$,
                  $$VALUES ('CANCELLED'::text, 'dependency_failed'::text, 3, true)$$, 'the refused retry changed nothing');

-- An unfinished parent: BLOCKED, counting the parents not SUCCEEDED.
SELECT results_eq($$SELECT task_state, max_attempts FROM taskforge.tf_retry(pg_temp.kid('on_q_s'))$$, $$VALUES ('BLOCKED'::text, 3)$$,
                  'a child of q (QUEUED) and s (SUCCEEDED): tf_retry returns BLOCKED');
SELECT results_eq($$SELECT state::text, parents_pending, finished_at, cancel_reason FROM taskforge.tasks WHERE task_id = pg_temp.kid('on_q_s')$$,
                  $$VALUES ('BLOCKED'::text, 1, NULL::timestamptz, NULL::text)$$, 'stored BLOCKED, waiting for q only, finish and reason cleared');
SELECT is_empty($$SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_parents_child'], max_tasks => 10)$$,
                'the BLOCKED child is not claimed');
CREATE TEMP TABLE cq AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_parents_q']);
CREATE TEMP TABLE fq AS SELECT * FROM taskforge.tf_finalize(pg_temp.id('q'), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT state::text, parents_pending FROM taskforge.tasks WHERE task_id = pg_temp.kid('on_q_s')$$,
                  $$VALUES ('QUEUED'::text, 0)$$, 'q SUCCEEDED: the retried child is released');

-- Every parent SUCCEEDED: QUEUED, due now.
SELECT results_eq($$SELECT task_state FROM taskforge.tf_retry(pg_temp.kid('on_s'))$$, ARRAY['QUEUED'], 'a child of s only: QUEUED');
SELECT results_eq($$SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['retry_parents_child'], max_tasks => 10) ORDER BY task_id$$,
                  $$SELECT task_id FROM k WHERE name IN ('on_q_s', 'on_s') ORDER BY task_id$$, 'both retried children are claimed now');

-- Once its parent is redriven the dependency-cancelled child comes back on its own (taskforge._tf_release_children),
-- and tf_retry of it is then TF409 (it is BLOCKED).
CREATE TEMP TABLE rf AS SELECT * FROM taskforge.tf_retry(pg_temp.id('f'));
SELECT results_eq($$SELECT state::text, parents_pending FROM taskforge.tasks WHERE task_id = pg_temp.kid('on_f')$$,
                  $$VALUES ('BLOCKED'::text, 1)$$, 'f retried: its child is BLOCKED again (q has SUCCEEDED, f is QUEUED)');
SELECT is(pg_temp.refusal(format('SELECT * FROM taskforge.tf_retry(%s)', pg_temp.kid('on_f'))),
          format('TF409 task_id: task_id: task %s is BLOCKED; only FAILED or CANCELLED tasks can be retried', pg_temp.kid('on_f')),
          'tf_retry of a BLOCKED task is TF409');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
