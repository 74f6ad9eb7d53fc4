-- _tf_claim_keyed: a claim with no keyed task due never enters the keyed pick (a keyed task not yet due does not count) and takes plain tasks exactly as before; with a keyed task due elsewhere the keyed pick runs but a claim of other queues returns the same plain tasks in the same order.
BEGIN;
SELECT plan(8);
SET LOCAL track_functions = 'pl';
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_none') AS id;
CREATE FUNCTION pg_temp.keyed_calls() RETURNS bigint LANGUAGE sql AS $f$
    SELECT coalesce((SELECT calls FROM pg_catalog.pg_stat_xact_user_functions
                      WHERE schemaname = 'taskforge' AND funcname = '_tf_claim_keyed'), 0);
$f$;
CREATE TEMP TABLE o (label text, task_id bigint);
CREATE FUNCTION pg_temp.submit_plain(p_queue text) RETURNS void LANGUAGE sql AS $f$
    INSERT INTO o
    SELECT p_queue || ':' || x.label, (SELECT task_id FROM taskforge.tf_submit('noop', '{}', p_queue, x.priority))
      FROM (VALUES ('low', -1), ('mid1', 0), ('mid2', 0), ('high', 7)) x(label, priority);
$f$;
CREATE FUNCTION pg_temp.claim_labels(p_queue text, p_max int) RETURNS text LANGUAGE sql AS $f$
    SELECT coalesce(string_agg(split_part(o.label, ':', 2), ',' ORDER BY c.pos), '')
      FROM (SELECT row_number() OVER () AS pos, x.task_id
              FROM taskforge.tf_claim((SELECT id FROM w), ARRAY[p_queue], max_tasks => p_max) x) c JOIN o USING (task_id);
$f$;
-- This file needs a database where no keyed task is due outside it (the pgTAP files of
-- _tf_claim_keyed roll back; tests/sql/test_flow_control.py cancels what it leaves).
SELECT is((SELECT count(*)::int FROM taskforge.tasks WHERE state = 'QUEUED' AND keyed AND scheduled_at <= clock_timestamp()), 0,
          'precondition: no keyed task is due');

DO $$ BEGIN PERFORM pg_temp.submit_plain('q_knone'); END $$;
SELECT is(pg_temp.claim_labels('q_knone', 3), 'high,mid1,mid2', 'plain tasks in claim order');
SELECT is(pg_temp.keyed_calls(), 0::bigint, 'no keyed task: the keyed pick is not entered');

-- Keyed tasks of every kind, none due yet.
CREATE TEMP TABLE later AS
SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_knone_later', priority => 9, delay_seconds => 3600, rate_key => 'rk_knone')
UNION ALL SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_knone_later', priority => 9, delay_seconds => 3600,
                                                  concurrency_key => 'ck_knone')
UNION ALL SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_knone_later', priority => 9, delay_seconds => 3600,
                                                  ordering_key => 'ok_knone');
DO $$ BEGIN PERFORM pg_temp.submit_plain('q_knone2'); END $$;
SELECT is(pg_temp.claim_labels('q_knone2', 2) || '/' || pg_temp.claim_labels('q_knone2', 2), 'high,mid1/mid2,low',
          'with keyed tasks not yet due, plain claims are the same');
SELECT is(pg_temp.keyed_calls(), 0::bigint, 'and the keyed pick is still not entered');

-- A keyed task due in another queue: the keyed pick runs, the plain claim of this queue is the same.
CREATE TEMP TABLE due AS SELECT task_id FROM taskforge.tf_submit('noop', '{}', 'q_knone_keyed', priority => 9, rate_key => 'rk_knone');
DO $$ BEGIN PERFORM pg_temp.submit_plain('q_knone3'); END $$;
SELECT is(pg_temp.claim_labels('q_knone3', 2) || '/' || pg_temp.claim_labels('q_knone3', 2), 'high,mid1/mid2,low',
          'with a keyed task due in another queue, a claim of this queue takes the same tasks in the same order');
SELECT cmp_ok(pg_temp.keyed_calls(), '>=', 1::bigint, 'there the keyed pick was entered');
SELECT is((SELECT state::text FROM taskforge.tasks JOIN due USING (task_id)), 'QUEUED', 'and left the other queue''s task alone');
SELECT * FROM finish();
ROLLBACK;
