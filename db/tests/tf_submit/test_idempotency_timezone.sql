-- tf_submit's idempotency fingerprint does not depend on the session TimeZone: the same instant written in another zone is a replay, the same wall-clock text in another zone is a conflict.
BEGIN;
SELECT plan(9);
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

SET LOCAL TimeZone = 'UTC';
CREATE TEMP TABLE orig AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, '2032-03-04 05:06:07.123456', 'k_submit_idem_tz');
CREATE TEMP TABLE orig_null AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, NULL, 'k_submit_idem_tz_null');

SET LOCAL TimeZone = 'Asia/Kolkata';
CREATE TEMP TABLE kolkata AS
    SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, '2032-03-04 10:36:07.123456', 'k_submit_idem_tz');
SELECT is((SELECT task_id FROM kolkata), (SELECT task_id FROM orig), 'the same instant written in Asia/Kolkata local time is a replay');
SELECT is((SELECT created FROM kolkata), false, 'that replay reports created = false');
SELECT pg_temp.throws_arg($$SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, '2032-03-04 05:06:07.123456', 'k_submit_idem_tz')$$,
    'TF409', 'idempotency_key', 'the same wall-clock text read in Asia/Kolkata is another instant: TF409');
SELECT is((SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, NULL, 'k_submit_idem_tz_null')),
    (SELECT task_id FROM orig_null), 'a NULL schedule replays under another TimeZone');

SET LOCAL TimeZone = 'America/Los_Angeles';
SELECT is((SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, '2032-03-03 21:06:07.123456-08', 'k_submit_idem_tz')),
    (SELECT task_id FROM orig), 'the same instant with an explicit -08 offset is a replay');
SELECT is((SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_submit_idem_tz', 0, 3, '2032-03-04 05:06:07.123456+00', 'k_submit_idem_tz')),
    (SELECT task_id FROM orig), 'the same instant with an explicit +00 offset is a replay');
SELECT is((SELECT scheduled_at FROM taskforge.tasks JOIN orig USING (task_id)), '2032-03-04 05:06:07.123456+00'::timestamptz,
    'the stored schedule is the instant given');
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE queue = 'q_submit_idem_tz'), 2, 'no replay created a task');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
