-- _tf_claim_keyed (through tf_claim): the queues and task_types filters apply to keyed tasks as to plain ones (NULL any, an empty array none); an ordering key's later task in another queue or of another type still waits for its head.
BEGIN;
SELECT plan(10);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('keyedf.x')$$, 'register task type keyedf.x');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('keyedf.y')$$, 'register task type keyedf.y');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_filters') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o SELECT 'r_a_x', task_id FROM taskforge.tf_submit('keyedf.x', '{}', 'q_kflt_a', rate_key => 'rk_kflt');
INSERT INTO o SELECT 'r_b_y', task_id FROM taskforge.tf_submit('keyedf.y', '{}', 'q_kflt_b', rate_key => 'rk_kflt');
INSERT INTO o SELECT 'c_a_y', task_id FROM taskforge.tf_submit('keyedf.y', '{}', 'q_kflt_a', concurrency_key => 'ck_kflt');
INSERT INTO o SELECT 'c_b_x', task_id FROM taskforge.tf_submit('keyedf.x', '{}', 'q_kflt_b', concurrency_key => 'ck_kflt');
INSERT INTO o SELECT 'o1_a_x', task_id FROM taskforge.tf_submit('keyedf.x', '{}', 'q_kflt_a', ordering_key => 'ok_kflt');
INSERT INTO o SELECT 'o2_b_x', task_id FROM taskforge.tf_submit('keyedf.x', '{}', 'q_kflt_b', ordering_key => 'ok_kflt');
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_kflt', 100, 100); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_concurrency_limit('ck_kflt', 10); END $$;
CREATE FUNCTION pg_temp.claim_labels(p_queues text[], p_types text[]) RETURNS text[] LANGUAGE sql AS $f$
    SELECT coalesce(array_agg(o.label ORDER BY o.label), '{}')
      FROM taskforge.tf_claim((SELECT id FROM w), p_queues, max_tasks => 10, task_types => p_types) c JOIN o USING (task_id);
$f$;

SELECT is(pg_temp.claim_labels(ARRAY[]::text[], ARRAY['keyedf.x', 'keyedf.y']), '{}'::text[],
          'an empty queues array: no keyed task');
SELECT is(pg_temp.claim_labels(ARRAY['q_kflt_a', 'q_kflt_b'], ARRAY[]::text[]), '{}'::text[],
          'an empty task_types array: no keyed task');
SELECT is(pg_temp.claim_labels(ARRAY['q_kflt_b'], ARRAY['keyedf.y']), ARRAY['r_b_y'],
          'queue b and type y: only the rate-keyed task of both');
SELECT is(pg_temp.claim_labels(ARRAY['q_kflt_b'], NULL), ARRAY['c_b_x'],
          'queue b, any type: the concurrency-keyed task; o2 is not its key''s head');
SELECT is(pg_temp.claim_labels(NULL, ARRAY['keyedf.x']), ARRAY['o1_a_x', 'r_a_x'],
          'any queue, type x: the rest of type x that may start (o2 still waits for o1)');
SELECT lives_ok($$SELECT taskforge.tf_finalize((SELECT task_id FROM o WHERE label = 'o1_a_x'), (SELECT id FROM w), 1,
                                               'succeeded')$$, 'the head o1 succeeds');
SELECT is(pg_temp.claim_labels(ARRAY['q_kflt_b'], ARRAY['keyedf.x']), ARRAY['o2_b_x'], 'now o2 starts, from its own queue');
SELECT is(pg_temp.claim_labels(ARRAY['q_kflt_a'], NULL), ARRAY['c_a_y'], 'and queue a gives the last one');
SELECT * FROM finish();
ROLLBACK;
