-- _tf_claim_keyed (through tf_claim): of an ordering key only the head (its unfinished task of lowest id) can start, so its tasks run one at a time in id order; the next starts only once the head is terminal (SUCCEEDED, FAILED or CANCELLED); a RETRYING head blocks the key until it runs again; keys are independent.
BEGIN;
SELECT plan(16);
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('keyed.retry_now', 0, 0, 0)$$,
                'a task type retried without backoff');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_ordering') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
INSERT INTO o
SELECT 'o' || n, (SELECT task_id FROM taskforge.tf_submit('keyed.retry_now', jsonb_build_object('n', n), 'q_ko',
                                                          ordering_key => 'ok_claim'))
  FROM generate_series(1, 5) n;
CREATE FUNCTION pg_temp.claim_labels() RETURNS text[] LANGUAGE sql AS $f$
    SELECT coalesce(array_agg(o.label ORDER BY o.label), '{}')
      FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_ko'], max_tasks => 10) c JOIN o USING (task_id);
$f$;
CREATE FUNCTION pg_temp.finish(p_label text, p_outcome text) RETURNS text LANGUAGE sql AS $f$
    SELECT f.task_state
      FROM (SELECT t.task_id, t.attempt_count, t.owner_worker_id FROM taskforge.tasks t JOIN o USING (task_id)
             WHERE o.label = p_label) t,
           taskforge.tf_finalize(t.task_id, t.owner_worker_id, t.attempt_count, p_outcome) f;
$f$;

SELECT is(pg_temp.claim_labels(), ARRAY['o1'], 'a claim of ten starts only the head');
SELECT is(pg_temp.claim_labels(), '{}'::text[], 'while the head runs nothing of the key starts');
SELECT is(pg_temp.finish('o1', 'succeeded'), 'SUCCEEDED', 'the head succeeds');
SELECT is(pg_temp.claim_labels(), ARRAY['o2'], 'then the next task, alone');

SELECT is(pg_temp.finish('o2', 'retryable'), 'RETRYING', 'the head ends its attempt retryable');
SELECT is(pg_temp.claim_labels(), '{}'::text[], 'a RETRYING head blocks the key: o3 does not start');
SELECT is((SELECT promoted FROM taskforge.tf_promote()) >= 1, true, 'the head is due again (no backoff)');
SELECT is(pg_temp.claim_labels(), ARRAY['o2'], 'the head runs again (before o3)');
SELECT is((SELECT attempt_count FROM taskforge.tasks JOIN o USING (task_id) WHERE label = 'o2'), 2, 'as its attempt 2');

SELECT is(pg_temp.finish('o2', 'failed'), 'FAILED', 'the head fails for good');
SELECT is(pg_temp.claim_labels(), ARRAY['o3'], 'a FAILED head lets the next run');
SELECT is((SELECT task_state FROM taskforge.tf_cancel((SELECT task_id FROM o WHERE label = 'o4'))), 'CANCELLED',
          'o4 is cancelled while it waits');
DO $$ BEGIN PERFORM pg_temp.finish('o3', 'succeeded'); END $$;
SELECT is(pg_temp.claim_labels(), ARRAY['o5'], 'after o3, the cancelled o4 is passed over: o5 runs');

-- Two ordering keys: each head can start, in the same claim.
CREATE TEMP TABLE x AS
SELECT (SELECT task_id FROM taskforge.tf_submit('noop', jsonb_build_object('n', n), 'q_ko_two',
                                                ordering_key => CASE WHEN n % 2 = 0 THEN 'ok_even' ELSE 'ok_odd' END))
           AS task_id
  FROM generate_series(1, 6) n;
SELECT results_eq($$SELECT task_id FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_ko_two'], max_tasks => 10)
                     ORDER BY task_id$$,
                  $$SELECT task_id FROM x ORDER BY task_id LIMIT 2$$, 'two keys: the head of each starts');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
