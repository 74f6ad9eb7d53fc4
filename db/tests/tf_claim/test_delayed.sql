-- While QUEUED tasks scheduled in the future exist (tf_claim then plans its candidate query per call), a claim takes only due tasks, in claim order, for every filter shape: none, queues, task_types, both; a future task ranked first is stepped over, and claimed once it is due.
BEGIN;
SELECT plan(13);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('claimdelay.t')$$, 'register a task type for this test');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_delayed') AS id;
-- In each queue: a future task at the top priority (first in claim order if it were due) and two due ones.
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT q || '_future', (SELECT task_id FROM taskforge.tf_submit('claimdelay.t', jsonb_build_object('l', q || '_future'), 'q_claim_delayed_' || q,
                                                                              priority => 32767, scheduled_at => clock_timestamp() + interval '1 hour'))
  FROM unnest(ARRAY['none', 'queue', 'type', 'both']) q;
INSERT INTO k SELECT q || '_due' || g, (SELECT task_id FROM taskforge.tf_submit('claimdelay.t', jsonb_build_object('l', q || '_due' || g), 'q_claim_delayed_' || q,
                                                                                 priority => 32767 - g))
  FROM unnest(ARRAY['none', 'queue', 'type', 'both']) q, generate_series(1, 2) g;
SELECT ok((SELECT max(scheduled_at) > clock_timestamp() FROM taskforge.tasks WHERE state = 'QUEUED'), 'setup: delayed QUEUED tasks exist');

-- No filter at all: the top of the whole claim order. Priorities 32767/32766 put this test's tasks first.
CREATE TEMP TABLE c_none AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), max_tasks => 2);
SELECT is((SELECT array_agg(k.label ORDER BY c.priority DESC, c.task_id ASC) FROM c_none c JOIN k USING (task_id)), ARRAY['none_due1', 'queue_due1'],
    'no filter: the two due tasks first in claim order, none of the future ones ranked above them');
-- Queue filter.
CREATE TEMP TABLE c_queue AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_delayed_queue'], max_tasks => 10);
SELECT is((SELECT array_agg(k.label) FROM c_queue JOIN k USING (task_id)), ARRAY['queue_due2'],
    'queues: the remaining due task of the queue, not its future one');
-- Task type filter.
CREATE TEMP TABLE c_type AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), task_types => ARRAY['claimdelay.t'], max_tasks => 3);
SELECT is((SELECT array_agg(k.label) FROM c_type JOIN k USING (task_id)), ARRAY['type_due1', 'both_due1', 'none_due2'],
    'task_types: due tasks of the type from any queue, in claim order, no future one');
-- Both filters.
CREATE TEMP TABLE c_both AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_delayed_both'], max_tasks => 10, task_types => ARRAY['claimdelay.t']);
SELECT is((SELECT array_agg(k.label) FROM c_both JOIN k USING (task_id)), ARRAY['both_due2'], 'queues and task_types: only the remaining due task');
-- Through tf_finalize_and_claim too.
CREATE TEMP TABLE c_fac AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_claim_delayed_type'], max_tasks => 10);
SELECT is((SELECT array_agg(k.label) FROM c_fac JOIN k USING (task_id)), ARRAY['type_due2'], 'tf_finalize_and_claim: only the due task');

SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.label LIKE '%_future' AND t.state = 'QUEUED' AND t.attempt_count = 0), 4,
    'the four future tasks are still QUEUED without attempts');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE k.label LIKE '%_due_' AND t.state = 'RUNNING'), 8,
    'all eight due tasks were claimed, each once');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), task_types => ARRAY['claimdelay.t'], max_tasks => 10)), 0,
    'nothing due is left of the type');

-- Time passes for one future task: it is claimed; the others still wait.
UPDATE taskforge.tasks t SET scheduled_at = clock_timestamp() - interval '1 millisecond' FROM k WHERE k.label = 'both_future' AND t.task_id = k.task_id;
SELECT is((SELECT array_agg(k.label) FROM taskforge.tf_claim((SELECT id FROM w), task_types => ARRAY['claimdelay.t'], max_tasks => 10) JOIN k USING (task_id)),
    ARRAY['both_future'], 'a task whose time has come is claimed, the still-future ones are not');
-- Once no delayed task is left, the usual statement claims the rest.
UPDATE taskforge.tasks t SET scheduled_at = clock_timestamp() - interval '1 millisecond' FROM k WHERE k.label LIKE '%_future' AND t.task_id = k.task_id AND t.state = 'QUEUED';
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), task_types => ARRAY['claimdelay.t'], max_tasks => 10)), 3,
    'after their time has come the last three are claimed');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
