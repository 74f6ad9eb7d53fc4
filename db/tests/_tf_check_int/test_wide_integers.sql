-- Every whole-number argument of the public API (priority, max_attempts, extra_attempts, max_tasks, max_running, failed_attempt, pid, and the fencing tokens task_id and attempt_number, alone and in the batch arrays) is numeric, so a number beyond int (written as a bigint or numeric literal, quoted, NaN) or with a fraction is TF400 naming the argument rather than 42883 or 22003, while every int call shape still resolves.
BEGIN;
SELECT plan(69);
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

-- tf_schedule_periodic and tf_enqueue_periodic (the request of a schedule is tf_submit's).
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic(name => 'wide', cron => '* * * * *', task_type => 'noop',
        queue => 'q_wide', priority => 3000000000)$$,
    'priority', 'must be between -32768 and 32767, got 3000000000', 'tf_schedule_periodic priority => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_schedule_periodic(name => 'wide', cron => '* * * * *', task_type => 'noop',
        queue => 'q_wide', max_attempts => 1.5)$$,
    'max_attempts', 'must be a whole number between 1 and 1000', 'a fractional tf_schedule_periodic max_attempts is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 3000000000)$$,
    'max_tasks', 'must be between 1 and 100000, got 3000000000', 'tf_enqueue_periodic max_tasks => 3000000000 is TF400');

-- tf_backoff, and the process ids of tf_register_worker and tf_scheduler_heartbeat.
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(failed_attempt => 3000000000)$$,
    'failed_attempt', 'must be between 1 and 2147483647, got 3000000000', 'tf_backoff failed_attempt => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_backoff(1.5)$$,
    'failed_attempt', 'must be a whole number between 1 and 2147483647', 'a fractional failed_attempt is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_register_worker(name => 'w_wide', pid => 3000000000)$$,
    'pid', 'must be between 1 and 2147483647, got 3000000000', 'tf_register_worker pid => 3000000000 is TF400');
SELECT pg_temp.throws_arg($$SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => gen_random_uuid(), name => 's_wide',
        pid => '99999999999999999999')$$,
    'pid', 'must be between 1 and 2147483647', 'a quoted tf_scheduler_heartbeat pid beyond bigint is TF400');

-- The fencing tokens: task_id beyond bigint or fractional, attempt_number beyond int or fractional.
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_renew(task_id => 99999999999999999999, worker_id => %L,
        attempt_number => 1)$$, (SELECT id FROM w)),
    'task_id', 'must be a whole number within bigint, got 99999999999999999999', 'tf_renew task_id beyond bigint is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_renew(task_id => 1, worker_id => %L, attempt_number => 3000000000)$$,
        (SELECT id FROM w)),
    'attempt_number', 'must be between 1 and 2147483647, got 3000000000', 'tf_renew attempt_number => 3000000000 is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize(task_id => 1.5, worker_id => %L, attempt_number => 1,
        outcome => 'succeeded')$$, (SELECT id FROM w)),
    'task_id', 'must be a whole number within bigint, got 1.5', 'a fractional tf_finalize task_id is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize(task_id => 1, worker_id => %L, attempt_number => '3000000000',
        outcome => 'succeeded')$$, (SELECT id FROM w)),
    'attempt_number', 'must be between 1 and 2147483647, got 3000000000', 'a quoted tf_finalize attempt_number beyond int is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize(task_id => 1, worker_id => %L, attempt_number => 2.5,
        outcome => 'failed')$$, (SELECT id FROM w)),
    'attempt_number', 'must be a whole number between 1 and 2147483647, got 2.5', 'a fractional attempt_number is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_cancel(task_id => 1e20)$$,
    'task_id', 'must be a whole number within bigint', 'tf_cancel task_id => 1e20 is TF400');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_retry(task_id => '-99999999999999999999')$$,
    'task_id', 'must be a whole number within bigint', 'a quoted tf_retry task_id below bigint is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_renew_many(worker_id => %L, task_ids => ARRAY[1, 99999999999999999999],
        attempt_numbers => ARRAY[1, 1])$$, (SELECT id FROM w)),
    'task_ids[2]', 'must be a whole number within bigint, got 99999999999999999999', 'a tf_renew_many element beyond bigint is TF400 naming it');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_renew_many(worker_id => %L, task_ids => ARRAY[1, 2],
        attempt_numbers => ARRAY[1, 3000000000])$$, (SELECT id FROM w)),
    'attempt_numbers[2]', 'must be between 1 and 2147483647, got 3000000000', 'a tf_renew_many attempt number beyond int is TF400 naming it');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_many(worker_id => %L, task_ids => '{1,2.5}',
        attempt_numbers => '{1,1}', outcomes => '{succeeded,succeeded}')$$, (SELECT id FROM w)),
    'task_ids[2]', 'must be a whole number within bigint, got 2.5', 'a fractional tf_finalize_many element is TF400 naming it');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => %L, task_ids => ARRAY[7],
        attempt_numbers => ARRAY[3000000000], outcomes => '{failed}')$$, (SELECT id FROM w)),
    'attempt_numbers[1]', 'must be between 1 and 2147483647, got 3000000000', 'a tf_finalize_and_claim attempt number beyond int is TF400');
SELECT pg_temp.throws_arg(format($$SELECT * FROM taskforge.tf_finalize_many(worker_id => %L, task_ids => ARRAY[NULL::bigint, 3],
        attempt_numbers => ARRAY[1, 0], outcomes => '{succeeded,succeeded}')$$, (SELECT id FROM w)),
    'task_ids[1]', 'must not be NULL', 'the first bad element is reported, its task id before its attempt number');

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

-- The int, bigint and array call shapes of the fencing tokens still resolve and work.
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'q_wide_fence');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_wide_fence'], 30, 1);
SELECT is((SELECT renewed FROM taskforge.tf_renew((SELECT task_id FROM c), (SELECT id FROM w), (SELECT attempt_number FROM c))),
    true, 'tf_renew takes the bigint task_id and int attempt_number tf_claim returned, positionally');
SELECT is((SELECT r.renewed FROM taskforge.tf_renew_many(worker_id => (SELECT id FROM w),
        task_ids => ARRAY[(SELECT task_id FROM c)]::bigint[], attempt_numbers => ARRAY[(SELECT attempt_number FROM c)]::int[]) r),
    true, 'tf_renew_many takes bigint[] and int[]');
SELECT is((SELECT accepted FROM taskforge.tf_finalize(task_id => (SELECT task_id FROM c), worker_id => (SELECT id FROM w),
        attempt_number => '1', outcome => 'succeeded')), true, 'tf_finalize takes a bigint task id and a quoted attempt number');
SELECT is((SELECT task_state FROM taskforge.tf_cancel((SELECT task_id FROM c)::int)), 'SUCCEEDED',
    'tf_cancel takes an int task id (the task succeeded)');
SELECT cmp_ok(taskforge.tf_backoff(2::smallint, 1, 10, 0), '=', 2::float8, 'tf_backoff takes a smallint');
SELECT isnt(taskforge.tf_register_worker(name => 'w_wide_ok', pid => 4242::int), NULL, 'tf_register_worker takes an int pid');
SELECT is((SELECT recovered FROM taskforge.tf_recover(10)), 0, 'tf_recover takes an int');
SELECT is((SELECT promoted FROM taskforge.tf_promote()), 0, 'tf_promote takes its default');
SELECT is(taskforge.tf_prune(86400 * 365, 10::smallint), 0, 'tf_prune takes a smallint');
SELECT is(taskforge.tf_set_queue_limit('q_wide_ok', 4), NULL::int, 'tf_set_queue_limit takes an int');
SELECT is(taskforge.tf_set_queue_limit('q_wide_ok', NULL), 4, 'and NULL, removing the limit');
SELECT is((SELECT max_running FROM taskforge.queues WHERE queue = 'q_wide_ok'), NULL::int, 'the limit is gone');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'taskforge' AND p.proname IN ('tf_submit', 'tf_retry', 'tf_claim', 'tf_finalize_and_claim',
                  'tf_recover', 'tf_promote', 'tf_prune', 'tf_set_queue_limit', 'tf_schedule_periodic', 'tf_enqueue_periodic',
                  'tf_backoff', 'tf_register_worker', 'tf_scheduler_heartbeat', 'tf_renew', 'tf_finalize', 'tf_cancel',
                  'tf_renew_many', 'tf_finalize_many')),
    18, 'one function per name: no overload makes a call ambiguous');
SELECT * FROM finish();
ROLLBACK;
