-- tf_submit_many raises TF409 naming the element when a key is reused with a different request (stored, or by an earlier element of the same call), and then writes nothing at all.
BEGIN;
SELECT plan(8);
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

CREATE TEMP TABLE orig AS SELECT * FROM taskforge.tf_submit('echo', '{"a": 1}', 'q_many_conflict', 5, 4, NULL, 'k_many_conflict');
CREATE TEMP TABLE before AS SELECT t.* FROM taskforge.tasks t JOIN orig USING (task_id);

SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[
        {"task_type": "noop", "queue": "q_many_conflict_new"},
        {"task_type": "noop", "queue": "q_many_conflict_new", "idempotency_key": "k_many_conflict_fresh"},
        {"task_type": "echo", "payload": {"a": 2}, "queue": "q_many_conflict", "priority": 5, "max_attempts": 4,
         "idempotency_key": "k_many_conflict"}]')$$,
    'TF409', 'requests[2].idempotency_key', 'a stored key with another payload is TF409 naming element 2');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[
        {"task_type": "echo", "payload": {"a": 1}, "queue": "q_many_conflict", "priority": 5, "idempotency_key": "k_many_conflict"}]')$$,
    'TF409', 'requests[0].idempotency_key', 'a stored key with another max_attempts (the default 3) is TF409');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[
        {"task_type": "noop", "queue": "q_many_conflict_new", "idempotency_key": "k_many_conflict_same_call"},
        {"task_type": "noop", "queue": "q_many_conflict_new"},
        {"task_type": "noop", "queue": "q_many_conflict_new", "priority": 1, "idempotency_key": "k_many_conflict_same_call"}]')$$,
    'TF409', 'requests[2].idempotency_key', 'a key repeated in the same call with another request is TF409 naming the later element');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit_many('[
        {"task_type": "noop", "queue": "q_many_conflict_new", "scheduled_at": "2031-05-05T10:00:00Z", "idempotency_key": "k_many_conflict_sched"},
        {"task_type": "noop", "queue": "q_many_conflict_new", "scheduled_at": "2031-05-05T10:00:00.000001Z", "idempotency_key": "k_many_conflict_sched"}]')$$,
    'TF409', 'requests[1].idempotency_key', 'a schedule one microsecond later under the same key is TF409');

SELECT is((SELECT t::text FROM taskforge.tasks t JOIN orig USING (task_id)), (SELECT b::text FROM before b),
    'the stored task is unchanged after the conflicts');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_many_conflict_new'), 0,
    'nothing was written: the elements before the conflicting one are not stored either');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE idempotency_key LIKE 'k_many_conflict_%'), 0,
    'the keys of the failed calls are free');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
