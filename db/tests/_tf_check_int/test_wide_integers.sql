-- Every whole-number argument of the public API (priority, max_attempts, extra_attempts, max_tasks, max_running) is numeric, so a number beyond int (written as a bigint or numeric literal, quoted, NaN) or with a fraction is TF400 naming the argument rather than 42883 or 22003, while every int call shape still resolves.
BEGIN;
SELECT plan(44);
-- throws_arg(sql, argument, message start): passes when sql raises TF400 "<argument>: <message...>".
CREATE FUNCTION pg_temp.throws_arg(p_sql text, p_argument text, p_message text, p_description text)
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
    IF v_state IS NOT DISTINCT FROM 'TF400' AND starts_with(v_message, p_argument || ': ' || p_message) THEN
        RETURN ok(true, p_description);
    END IF;
    RETURN ok(false, p_description) || E'\n' || diag(format('expected TF400 "%s: %s...", got %s',
        p_argument, p_message, coalesce(v_state || ' "' || v_message || '"', 'no error')));
END;
$helper$;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_wide_integers') AS id;

-- tf_submit: priority and max_attempts, in every spelling of a too-wide number.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => 3000000000)$$,
    'priority', 'must be between -32768 and 32767, got 3000000000', 'priority => 3000000000 (a bigint literal) is TF400, not 42883');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => '3000000000')$$,
    'priority', 'must be between -32768 and 32767, got 3000000000', 'a quoted 3000000000 is TF400, not 22003');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => -99999999999999999999999)$$,
    'priority', 'must be between -32768 and 32767', 'a number beyond bigint is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => 2.5)$$,
    'priority', 'must be a whole number between -32768 and 32767, got 2.5', 'a fraction is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => 'NaN')$$,
    'priority', 'must be between -32768 and 32767, got NaN', 'NaN is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', max_attempts => 3000000000)$$,
    'max_attempts', 'must be between 1 and 1000, got 3000000000', 'max_attempts => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', max_attempts => 1.5)$$,
    'max_attempts', 'must be a whole number between 1 and 1000', 'a fractional max_attempts is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', max_attempts => 'Infinity')$$,
    'max_attempts', 'must be between 1 and 1000, got Infinity', 'an infinite max_attempts is TF400');
-- The message for a value beyond int is the one for a value just out of range.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide', priority => 40000)$$,
    'priority', 'must be between -32768 and 32767, got 40000', 'priority 40000 has the same message shape');

-- tf_retry, tf_claim, tf_finalize_and_claim, tf_recover, tf_promote, tf_prune, tf_set_queue_limit.
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_retry(task_id => 1, extra_attempts => 3000000000)$$,
    'extra_attempts', 'must be between 1 and 1000, got 3000000000', 'tf_retry extra_attempts => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_retry(task_id => 1, extra_attempts => '3000000000')$$,
    'extra_attempts', 'must be between 1 and 1000', 'a quoted extra_attempts beyond int is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_retry(task_id => 1, extra_attempts => 1.5)$$,
    'extra_attempts', 'must be a whole number between 1 and 1000', 'a fractional extra_attempts is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, max_tasks => 3000000000)$$, (SELECT id FROM w)),
    'max_tasks', 'must be between 1 and 1000, got 3000000000', 'tf_claim max_tasks => 3000000000 is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, max_tasks => '99999999999999999999')$$, (SELECT id FROM w)),
    'max_tasks', 'must be between 1 and 1000', 'a quoted tf_claim max_tasks beyond bigint is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_claim(worker_id => %L, max_tasks => 1.5)$$, (SELECT id FROM w)),
    'max_tasks', 'must be a whole number between 1 and 1000', 'a fractional tf_claim max_tasks is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => %L, task_ids => '{}',
        attempt_numbers => '{}', outcomes => '{}', max_tasks => 3000000000)$$, (SELECT id FROM w)),
    'max_tasks', 'must be between 1 and 1000, got 3000000000', 'tf_finalize_and_claim max_tasks => 3000000000 is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => %L, task_ids => '{1}',
        attempt_numbers => '{1}', outcomes => '{succeeded}', max_tasks => -3000000000)$$, (SELECT id FROM w)),
    'max_tasks', 'must be between 0 and 1000, got -3000000000', 'with attempts to finalize too');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => %L, task_ids => '{1}',
        attempt_numbers => '{1}', outcomes => '{succeeded}', max_tasks => 0.5)$$, (SELECT id FROM w)),
    'max_tasks', 'must be a whole number between 0 and 1000', 'a fractional tf_finalize_and_claim max_tasks is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_recover(max_tasks => 3000000000)$$,
    'max_tasks', 'must be between 1 and 100000, got 3000000000', 'tf_recover max_tasks => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_recover(max_tasks => 10.5)$$,
    'max_tasks', 'must be a whole number between 1 and 100000', 'a fractional tf_recover max_tasks is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_promote(max_tasks => 3000000000)$$,
    'max_tasks', 'must be between 1 and 100000, got 3000000000', 'tf_promote max_tasks => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_promote(max_tasks => '1e30')$$,
    'max_tasks', 'must be between 1 and 100000', 'a quoted 1e30 tf_promote max_tasks is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_prune(older_than_seconds => 60, max_tasks => 3000000000)$$,
    'max_tasks', 'must be between 1 and 100000, got 3000000000', 'tf_prune max_tasks => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_prune(older_than_seconds => 60, max_tasks => 2.25)$$,
    'max_tasks', 'must be a whole number between 1 and 100000', 'a fractional tf_prune max_tasks is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_set_queue_limit(queue => 'q_wide', max_running => 3000000000)$$,
    'max_running', 'must be between 1 and 1000000, got 3000000000', 'tf_set_queue_limit max_running => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_set_queue_limit(queue => 'q_wide', max_running => 2.5)$$,
    'max_running', 'must be a whole number between 1 and 1000000', 'a fractional max_running is TF400');

-- Nothing was written by the refused calls.
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_wide'), 0, 'no task was submitted');
SELECT is((SELECT count(*)::int FROM taskforge.queues WHERE queue = 'q_wide'), 0, 'no queue control row was written');

-- Every call shape of the int versions still resolves: int, smallint, bigint, unknown literals, positional, defaults.
SELECT is((SELECT created FROM taskforge.tf_submit('noop', '{}', 'q_wide_ok', 5, 2)), true, 'positional int arguments');
SELECT is((SELECT created FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide_ok', priority => 5::smallint,
        max_attempts => 2::bigint)), true, 'smallint and bigint arguments');
SELECT is((SELECT created FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide_ok', priority => '7', max_attempts => '3')),
    true, 'quoted arguments');
SELECT is((SELECT created FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide_ok', priority => 1.0)), true,
    'a whole number written with a fraction part (1.0)');
SELECT is((SELECT array_agg(priority::int ORDER BY priority) FROM taskforge.tasks WHERE queue = 'q_wide_ok'), ARRAY[1, 5, 5, 7],
    'the priorities are stored as the whole numbers given');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_wide_ok' AND max_attempts = 2), 2, 'and the budgets');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_wide_ok'], 30, 2::bigint)), 2,
    'tf_claim takes a bigint max_tasks positionally');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim(worker_id => (SELECT id FROM w), queues => ARRAY['q_wide_ok'])), 1,
    'tf_claim''s default max_tasks is 1');
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', NULL, NULL,
        ARRAY['q_wide_ok'], 30, 5)), 1, 'tf_finalize_and_claim takes an int max_tasks positionally (the last task)');
SELECT is((SELECT recovered FROM taskforge.tf_recover(10)), 0, 'tf_recover takes an int');
SELECT is((SELECT promoted FROM taskforge.tf_promote()), 0, 'tf_promote takes its default');
SELECT is(taskforge.tf_prune(86400 * 365, 10::smallint), 0, 'tf_prune takes a smallint');
SELECT is(taskforge.tf_set_queue_limit('q_wide_ok', 4), NULL::int, 'tf_set_queue_limit takes an int');
SELECT is(taskforge.tf_set_queue_limit('q_wide_ok', NULL), 4, 'and NULL, removing the limit');
SELECT is((SELECT max_running FROM taskforge.queues WHERE queue = 'q_wide_ok'), NULL::int, 'the limit is gone');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'taskforge' AND p.proname IN ('tf_submit', 'tf_retry', 'tf_claim', 'tf_finalize_and_claim',
                  'tf_recover', 'tf_promote', 'tf_prune', 'tf_set_queue_limit')),
    8, 'one function per name: no overload makes a call ambiguous');
SELECT * FROM finish();
ROLLBACK;
