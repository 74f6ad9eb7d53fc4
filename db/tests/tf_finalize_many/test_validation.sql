-- tf_finalize_many rejects bad arguments with TF400 naming the argument (and the element, e.g. 'outcomes[2]') before touching anything: NULL or mismatched arrays, empty or over 1000 elements, NULL elements, repeated tasks, attempt numbers below 1, unknown outcomes, results over 1 MiB. A rejected batch writes nothing, not even its valid elements.
BEGIN;
SELECT plan(38);
-- throws_arg(sql, sqlstate, argument, description): passes when sql raises exactly that SQLSTATE
-- with a message that names the argument ("<argument>: <problem>").
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_sqlstate text, p_argument text, p_description text)
RETURNS text
LANGUAGE plpgsql
AS $helper$
DECLARE
    v_state text;
    v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    IF v_state IS NOT DISTINCT FROM p_sqlstate AND starts_with(v_message, p_argument || ': ') THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected SQLSTATE %s with message "%s: ...", got %s',
        p_sqlstate, p_argument, coalesce(v_state || ' "' || v_message || '"', 'no error')));
END;
$helper$;

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_validation') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_validation')) AS task_id
  FROM generate_series(1, 3) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_validation'], 600, max_tasks => 10);
-- ids: the three running tasks in order; element 1 is always valid, so a write would show.
CREATE TEMP TABLE ids AS SELECT array_agg(task_id ORDER BY n) AS a FROM k;
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN k USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN k USING (task_id);

-- worker_id and task_ids.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many(NULL, (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), NULL, ARRAY[1], ARRAY['succeeded'])$$,
    'TF400', 'task_ids', 'task_ids NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), '{}', '{}', '{}')$$,
    'TF400', 'task_ids', 'an empty batch is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(g::bigint) FROM generate_series(1, 1001) g),
    (SELECT array_agg(1) FROM generate_series(1, 1001) g), (SELECT array_agg('succeeded'::text) FROM generate_series(1, 1001) g))$$,
    'TF400', 'task_ids', '1001 elements is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), '{{1, 2}, {3, 4}}', '{{1, 1}, {1, 1}}', '{{failed, failed}, {failed, failed}}')$$,
    'TF400', 'task_ids', 'a two-dimensional task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT a[1] FROM ids), NULL, (SELECT a[3] FROM ids)],
    ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'task_ids[2]', 'a NULL task id is TF400 naming task_ids[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a || a[1] FROM ids),
    ARRAY[1, 1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded', 'failed'])$$,
    'TF400', 'task_ids[4]', 'a task named twice is TF400 naming its second place, task_ids[4]');

-- attempt_numbers.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), NULL, ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers longer than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 0, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers[2]', 'attempt number 0 is TF400 naming attempt_numbers[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, -7], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers[3]', 'a negative attempt number is TF400 naming attempt_numbers[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, NULL, 1], ARRAY['succeeded', 'succeeded', 'succeeded'])$$,
    'TF400', 'attempt_numbers[2]', 'a NULL attempt number is TF400 naming attempt_numbers[2]');

-- outcomes.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], NULL)$$,
    'TF400', 'outcomes', 'outcomes NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded'])$$,
    'TF400', 'outcomes', 'outcomes shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'success', 'succeeded'])$$,
    'TF400', 'outcomes[2]', 'outcome ''success'' is TF400 naming outcomes[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'failed', 'SUCCEEDED'])$$,
    'TF400', 'outcomes[3]', 'outcomes are lower case: ''SUCCEEDED'' is TF400 naming outcomes[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', NULL, 'failed'])$$,
    'TF400', 'outcomes[2]', 'a NULL outcome is TF400 naming outcomes[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'failed', 'lease_expired'])$$,
    'TF400', 'outcomes[3]', 'lease_expired is recovery''s outcome, not a worker''s: TF400 naming outcomes[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', '', 'failed'])$$,
    'TF400', 'outcomes[2]', 'an empty outcome is TF400 naming outcomes[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'bogus', 'nonsense'])$$,
    'TF400', 'outcomes[2]', 'with two bad elements the first is named');

-- results.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'succeeded'],
    ARRAY[NULL, to_jsonb(repeat('x', 1048575)), NULL])$$,
    'TF400', 'results[2]', 'a result of 1 MiB + 1 byte is TF400 naming results[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], ARRAY['succeeded', 'succeeded', 'failed'],
    ARRAY[NULL, NULL, jsonb_build_object('a', repeat('x', 2000000))])$$,
    'TF400', 'results[3]', 'an oversized result is TF400 whatever the outcome');

-- Validation comes before any lookup, for unknown tasks too.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT max(task_id) + 1000000 FROM taskforge.tasks)], ARRAY[1], ARRAY['bogus'])$$,
    'TF400', 'outcomes[1]', 'arguments are validated before the tasks are looked up');

-- Nothing was written by any rejected call, though element 1 was valid in each.
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN k USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'the tasks are unchanged after the rejected calls');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id) FROM taskforge.attempts a JOIN k USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_att x), 'the attempts are unchanged');

-- The bounds that are accepted.
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_many((SELECT id FROM w),
              (SELECT array_agg(-g::bigint) FROM generate_series(1, 1000) g),
              (SELECT array_agg(1) FROM generate_series(1, 1000) g),
              (SELECT array_agg('failed'::text) FROM generate_series(1, 1000) g)) r WHERE r.reason = 'not_found'), 1000,
    '1000 elements are accepted (each unknown task reported not_found)');
SELECT is((SELECT array_agg(reason) FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[-1, -2], ARRAY[1, 1], ARRAY['failed', 'failed'])),
    ARRAY['not_found', 'not_found'], 'unknown tasks are not an error (unlike tf_finalize''s TF404): the batch reports them');
SELECT is((SELECT accepted FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT a[1] FROM ids)], ARRAY[1], ARRAY['succeeded'],
                                                           ARRAY[to_jsonb(repeat('x', 1048574))])), true,
    'a result of exactly 1 MiB is accepted');
SELECT is((SELECT octet_length(t.result::text) FROM taskforge.tasks t WHERE t.task_id = (SELECT a[1] FROM ids)), 1048576, 'and stored whole');
-- A one-element batch with a single-task worker id that does not exist: the guard refuses it (not_owner), no TF404.
SELECT is((SELECT reason FROM taskforge.tf_finalize_many(gen_random_uuid(), ARRAY[(SELECT a[2] FROM ids)], ARRAY[1], ARRAY['succeeded'])),
    'not_owner', 'an unknown worker id is refused by the guard, not an error');

-- Parameter names are the API.
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize_many(errors => ARRAY['{"message": "named"}'::jsonb], outcomes => ARRAY['failed'],
    attempt_numbers => ARRAY[1], worker_id => (SELECT id FROM w), task_ids => ARRAY[(SELECT a[2] FROM ids)], results => NULL);
SELECT is((SELECT accepted::text || '/' || task_state FROM f2), 'true/FAILED', 'a call with named arguments in another order is accepted');
SELECT is((SELECT last_error FROM taskforge.tasks WHERE task_id = (SELECT a[2] FROM ids)), '{"message": "named"}'::jsonb, 'the named error is stored');
SELECT is((SELECT attempt_number FROM f2), 1, 'the row echoes the attempt number');
SELECT is((SELECT task_id FROM f2), (SELECT a[2] FROM ids), 'and the task id');
SELECT is((SELECT count(*)::int FROM taskforge.tasks t JOIN k USING (task_id) WHERE t.state = 'RUNNING'), 1, 'the third task is still RUNNING');
SELECT is((SELECT accepted FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT a[3] FROM ids)], ARRAY[1], ARRAY['succeeded'])), true,
    'and can still be finalized');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
