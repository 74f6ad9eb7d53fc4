-- tf_submit's fingerprint covers depends_on (as a set: order and duplicates do not matter) and the three flow keys: the same key with the same parents and keys replays the stored task (created = false, whatever its state), with other parents or keys it is TF409 idempotency_key, and a refused submit marks no parent.
BEGIN;
SELECT plan(17);
-- refusal(sql): 'SQLSTATE COLUMN' of the error sql raises, or 'no error'.
CREATE FUNCTION pg_temp.refusal(p_sql text) RETURNS text LANGUAGE plpgsql AS $helper$
DECLARE v_state text; v_column text;
BEGIN
    BEGIN
        EXECUTE p_sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_column = COLUMN_NAME;
        RETURN v_state || ' ' || coalesce(v_column, 'NULL');
    END;
    RETURN 'no error';
END;
$helper$;
CREATE TEMP TABLE p AS
SELECT s.n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', s.n), 'submit_deps_key_parent')) AS task_id
  FROM generate_series(1, 3) s(n);
DO $$ BEGIN
    PERFORM set_config('tftest.p1', (SELECT task_id FROM p WHERE n = 1)::text, true);
    PERFORM set_config('tftest.p2', (SELECT task_id FROM p WHERE n = 2)::text, true);
    PERFORM set_config('tftest.p3', (SELECT task_id FROM p WHERE n = 3)::text, true);
END $$;

-- depends_on
CREATE TEMP TABLE first AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
    depends_on => ARRAY[(SELECT task_id FROM p WHERE n = 2), (SELECT task_id FROM p WHERE n = 1)]);
SELECT results_eq($$SELECT f.state, f.created, count(DISTINCT p.task_id)::int FROM first f, p GROUP BY 1, 2$$, $$VALUES ('BLOCKED'::text, true, 3)$$,
                  'setup: three parents; the first submit creates a BLOCKED task');
SELECT results_eq($$SELECT task_id, state, created FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
                      depends_on => ARRAY[current_setting('tftest.p2')::bigint, current_setting('tftest.p1')::bigint])$$,
                  $$SELECT task_id, 'BLOCKED'::text, false FROM first$$, 'the same request replays the stored task, created = false');
SELECT results_eq($$SELECT task_id, created FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
                      depends_on => ARRAY[current_setting('tftest.p1')::bigint, current_setting('tftest.p2')::bigint,
                                          current_setting('tftest.p1')::bigint])$$,
                  $$SELECT task_id, false FROM first$$, 'the same parents in another order and with a duplicate: a replay');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
                              depends_on => ARRAY[current_setting('tftest.p1')::bigint])$$),
          'TF409 idempotency_key', 'one parent fewer is another request: TF409');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
                              depends_on => ARRAY[current_setting('tftest.p1')::bigint, current_setting('tftest.p3')::bigint])$$),
          'TF409 idempotency_key', 'another parent is another request: TF409');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1')$$),
          'TF409 idempotency_key', 'no parents is another request: TF409');
SELECT is((SELECT count(*)::int FROM taskforge.task_dependencies WHERE child_task_id = (SELECT task_id FROM first)), 2,
          'replays add no edge');
SELECT is((SELECT has_children FROM taskforge.tasks WHERE task_id = current_setting('tftest.p3')::bigint), false,
          'the refused submit naming p3 left it without children');

-- The replay returns the stored task whatever its state now.
CREATE TEMP TABLE x AS SELECT * FROM taskforge.tf_cancel((SELECT task_id FROM first));
SELECT results_eq($$SELECT task_id, state, created FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k1',
                      depends_on => ARRAY[current_setting('tftest.p1')::bigint, current_setting('tftest.p2')::bigint])$$,
                  $$SELECT task_id, 'CANCELLED'::text, false FROM first$$, 'a replay after a cancel is the CANCELLED task, nothing reset');

-- No parents stored, parents asked: TF409, and the parent is not marked.
CREATE TEMP TABLE plain AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k2');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k2',
                              depends_on => ARRAY[current_setting('tftest.p3')::bigint])$$),
          'TF409 idempotency_key', 'a key stored without parents, asked with one: TF409');
SELECT is((SELECT has_children FROM taskforge.tasks WHERE task_id = current_setting('tftest.p3')::bigint), false,
          'still no children for p3');

-- Flow keys.
CREATE TEMP TABLE keyed AS SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k3',
    rate_key => 'rk', concurrency_key => 'ck', ordering_key => 'ok');
SELECT results_eq($$SELECT task_id, created FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k3',
                      rate_key => 'rk', concurrency_key => 'ck', ordering_key => 'ok')$$,
                  $$SELECT task_id, false FROM keyed$$, 'the same three keys: a replay');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k3',
                              rate_key => 'rk2', concurrency_key => 'ck', ordering_key => 'ok')$$),
          'TF409 idempotency_key', 'another rate_key: TF409');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k3',
                              rate_key => 'rk', concurrency_key => 'ck2', ordering_key => 'ok')$$),
          'TF409 idempotency_key', 'another concurrency_key: TF409');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k3',
                              rate_key => 'rk', concurrency_key => 'ck')$$),
          'TF409 idempotency_key', 'the ordering_key left out: TF409');
SELECT is(pg_temp.refusal($$SELECT * FROM taskforge.tf_submit('noop', queue => 'submit_deps_key', idempotency_key => 'submit-deps-k2',
                              ordering_key => 'ok')$$),
          'TF409 idempotency_key', 'a key stored without flow keys, asked with one: TF409');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
