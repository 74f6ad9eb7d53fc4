-- tf_finalize_many takes results and errors as NULL (none at all) or as arrays as long as task_ids with NULL elements; a result is stored only for a succeeded element and an error only for the other outcomes; a shorter or longer array is TF400 (the element pairing would be a guess) and writes nothing.
BEGIN;
SELECT plan(14);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fmany_arrays') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_fmany_arrays')) AS task_id
  FROM generate_series(1, 6) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_arrays'], 60, max_tasks => 10);
CREATE TEMP TABLE snap AS SELECT t.* FROM taskforge.tasks t JOIN k USING (task_id);

-- Shorter or longer arrays.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['succeeded', 'succeeded'], results => ARRAY['{"r": 1}'::jsonb])$$,
    'TF400', 'results', 'a results array shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['succeeded', 'succeeded'], results => '{}'::jsonb[])$$,
    'TF400', 'results', 'an empty results array is TF400 (use NULL for no results)');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['succeeded', 'succeeded'], results => ARRAY['1'::jsonb, '2', '3'])$$,
    'TF400', 'results', 'a results array longer than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['failed', 'failed'], errors => ARRAY['{"message": "x"}'::jsonb])$$,
    'TF400', 'errors', 'an errors array shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['failed', 'failed'], errors => ARRAY[NULL::jsonb, NULL, NULL])$$,
    'TF400', 'errors', 'an errors array longer than task_ids is TF400');
SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN k USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap x), 'the rejected calls changed nothing');

-- results and errors NULL: tasks 1 (succeeded) and 2 (failed).
CREATE TEMP TABLE f1 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n <= 2),
    ARRAY[1, 1], ARRAY['succeeded', 'failed']);
SELECT is((SELECT array_agg(accepted::text || '/' || task_state ORDER BY task_id) FROM f1), ARRAY['true/SUCCEEDED', 'true/FAILED'],
    'results and errors omitted (NULL): both elements are accepted');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)
            WHERE k.n <= 2 AND t.result IS NULL AND a.result IS NULL AND t.last_error IS NULL AND a.error IS NULL), 2,
    'no result and no error is stored');

-- Full-length arrays with NULL elements and values on the "wrong" outcome: tasks 3..6.
CREATE TEMP TABLE f2 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), (SELECT array_agg(task_id ORDER BY n) FROM k WHERE n > 2),
    ARRAY[1, 1, 1, 1], ARRAY['succeeded', 'succeeded', 'failed', 'failed'],
    ARRAY['{"r": 3}'::jsonb, NULL, '{"r": 5}', NULL],
    ARRAY['{"message": "e3"}'::jsonb, NULL, '{"message": "e5"}', NULL]);
SELECT is((SELECT count(*)::int FROM f2 WHERE accepted), 4, 'arrays with NULL elements are accepted');
SELECT results_eq($$SELECT k.n, t.result, a.result FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)
                     WHERE k.n > 2 ORDER BY k.n$$,
                  $$VALUES (3, '{"r": 3}'::jsonb, '{"r": 3}'::jsonb), (4, NULL, NULL), (5, NULL, NULL), (6, NULL, NULL)$$,
                  'a result is stored only for a succeeded element (task 5 failed: its result is dropped)');
SELECT results_eq($$SELECT k.n, t.last_error, a.error FROM k JOIN taskforge.tasks t USING (task_id) JOIN taskforge.attempts a USING (task_id)
                     WHERE k.n > 2 ORDER BY k.n$$,
                  $$VALUES (3, NULL::jsonb, NULL::jsonb), (4, NULL, NULL), (5, '{"message": "e5"}'::jsonb, '{"message": "e5"}'::jsonb), (6, NULL, NULL)$$,
                  'an error is stored only for a failure (task 3 succeeded: its error is dropped)');

-- An all-NULL results array is the same as NULL.
CREATE TEMP TABLE s2 AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fmany_arrays_2');
CREATE TEMP TABLE c2 AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fmany_arrays_2']);
CREATE TEMP TABLE f3 AS SELECT * FROM taskforge.tf_finalize_many((SELECT id FROM w), ARRAY[(SELECT task_id FROM s2)], ARRAY[1],
    ARRAY['succeeded'], ARRAY[NULL::jsonb], ARRAY[NULL::jsonb]);
SELECT is((SELECT accepted FROM f3), true, 'one-element arrays holding NULL are accepted');
SELECT ok((SELECT result IS NULL AND last_error IS NULL FROM taskforge.tasks JOIN s2 USING (task_id)), 'and store nothing');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
