-- tf_renew_many rejects bad arguments with TF400 naming the argument (and element) before touching anything: worker_id NULL, task_ids NULL/empty/over 1000/two-dimensional/with a NULL or a repeated task, attempt_numbers NULL/mismatched/below 1, lease_seconds outside 0 < s <= 86400. A rejected batch renews nothing.
BEGIN;
SELECT plan(30);
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

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_rmany_validation') AS id;
CREATE TEMP TABLE k AS
SELECT g AS n, (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', g), 'q_rmany_validation')) AS task_id
  FROM generate_series(1, 3) g;
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_rmany_validation'], 60, max_tasks => 10);
CREATE TEMP TABLE ids AS SELECT array_agg(task_id ORDER BY n) AS a FROM k;
CREATE TEMP TABLE snap_task AS SELECT t.* FROM taskforge.tasks t JOIN k USING (task_id);
CREATE TEMP TABLE snap_att AS SELECT a.* FROM taskforge.attempts a JOIN k USING (task_id);

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many(NULL, (SELECT a FROM ids), ARRAY[1, 1, 1])$$,
    'TF400', 'worker_id', 'worker_id NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), NULL, ARRAY[1])$$,
    'TF400', 'task_ids', 'task_ids NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), '{}', '{}')$$,
    'TF400', 'task_ids', 'an empty batch is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(g::bigint) FROM generate_series(1, 1001) g),
    (SELECT array_agg(1) FROM generate_series(1, 1001) g))$$,
    'TF400', 'task_ids', '1001 elements is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), '{{1, 2}, {3, 4}}', '{1, 1, 1, 1}')$$,
    'TF400', 'task_ids', 'a two-dimensional task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT a[1] FROM ids), NULL, (SELECT a[3] FROM ids)], ARRAY[1, 1, 1])$$,
    'TF400', 'task_ids[2]', 'a NULL task id is TF400 naming task_ids[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a || a[2] FROM ids), ARRAY[1, 1, 1, 1])$$,
    'TF400', 'task_ids[4]', 'a task named twice is TF400 naming its second place, task_ids[4]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), NULL)$$,
    'TF400', 'attempt_numbers', 'attempt_numbers NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers shorter than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1, 1])$$,
    'TF400', 'attempt_numbers', 'attempt_numbers longer than task_ids is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), '{}')$$,
    'TF400', 'attempt_numbers', 'an empty attempt_numbers is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 0, 1])$$,
    'TF400', 'attempt_numbers[2]', 'attempt number 0 is TF400 naming attempt_numbers[2]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, NULL])$$,
    'TF400', 'attempt_numbers[3]', 'a NULL attempt number is TF400 naming attempt_numbers[3]');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, -1, -2])$$,
    'TF400', 'attempt_numbers[2]', 'with two bad elements the first is named');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], 0)$$,
    'TF400', 'lease_seconds', 'lease_seconds 0 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], -10)$$,
    'TF400', 'lease_seconds', 'a negative lease_seconds is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], 'NaN')$$,
    'TF400', 'lease_seconds', 'lease_seconds NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], 'Infinity')$$,
    'TF400', 'lease_seconds', 'lease_seconds Infinity is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], 86400.5)$$,
    'TF400', 'lease_seconds', 'lease_seconds above 86400 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT a FROM ids), ARRAY[1, 1, 1], NULL)$$,
    'TF400', 'lease_seconds', 'lease_seconds NULL is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT max(task_id) + 1000000 FROM taskforge.tasks)], ARRAY[0])$$,
    'TF400', 'attempt_numbers[1]', 'arguments are validated before the tasks are looked up');

SELECT is((SELECT array_agg(t::text ORDER BY t.task_id) FROM taskforge.tasks t JOIN k USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_task x), 'the tasks are unchanged after the rejected calls');
SELECT is((SELECT array_agg(a::text ORDER BY a.task_id) FROM taskforge.attempts a JOIN k USING (task_id)),
          (SELECT array_agg(x::text ORDER BY x.task_id) FROM snap_att x), 'the attempts keep their deadlines');

-- Accepted bounds.
SELECT is((SELECT count(*)::int FROM taskforge.tf_renew_many((SELECT id FROM w), (SELECT array_agg(-g::bigint) FROM generate_series(1, 1000) g),
                                                             (SELECT array_agg(1) FROM generate_series(1, 1000) g)) r
            WHERE r.reason = 'not_found' AND NOT r.renewed AND r.lease_expires_at IS NULL AND r.cancel_requested IS NULL), 1000,
    '1000 elements are accepted (unknown tasks are reported not_found, not TF404)');
SELECT is((SELECT renewed FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT a[1] FROM ids)], ARRAY[1], 86400)), true,
    'lease_seconds 86400 is accepted');
SELECT is((SELECT renewed FROM taskforge.tf_renew_many((SELECT id FROM w), ARRAY[(SELECT a[2] FROM ids)], ARRAY[1], 0.001)), true,
    'a tiny positive lease_seconds is accepted');

-- Parameter names are the API.
CREATE TEMP TABLE r AS SELECT * FROM taskforge.tf_renew_many(lease_seconds => 90, attempt_numbers => ARRAY[1],
    task_ids => ARRAY[(SELECT a[3] FROM ids)], worker_id => (SELECT id FROM w));
SELECT is((SELECT renewed FROM r), true, 'a call with named arguments in another order is accepted');
SELECT ok((SELECT lease_expires_at BETWEEN clock_timestamp() + interval '89 seconds' AND clock_timestamp() + interval '90 seconds' FROM r),
    'its lease_seconds applies');
SELECT is((SELECT task_id FROM r), (SELECT a[3] FROM ids), 'the row echoes the task id');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
