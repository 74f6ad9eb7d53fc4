-- tf_finalize_and_claim claims only from the given queues and task types, as tf_claim does (NULL = any, an empty array matches nothing), also in a call that finalizes first.
BEGIN;
SELECT plan(9);

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('fac.alpha'), taskforge.tf_register_task_type('fac.beta')$$, 'register two task types');
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_fac_filters') AS id;
-- Four tasks: queue a/b x type alpha/beta. Higher priority for the ones a filter must skip.
CREATE TEMP TABLE k (label text PRIMARY KEY, task_id bigint);
INSERT INTO k SELECT 'a_alpha', task_id FROM taskforge.tf_submit('fac.alpha', '{}', 'q_fac_filters_a', priority => 1);
INSERT INTO k SELECT 'a_beta',  task_id FROM taskforge.tf_submit('fac.beta',  '{}', 'q_fac_filters_a', priority => 4);
INSERT INTO k SELECT 'b_alpha', task_id FROM taskforge.tf_submit('fac.alpha', '{}', 'q_fac_filters_b', priority => 3);
INSERT INTO k SELECT 'b_beta',  task_id FROM taskforge.tf_submit('fac.beta',  '{}', 'q_fac_filters_b', priority => 2);
-- A running task of this worker to finalize along the way.
CREATE TEMP TABLE s AS SELECT * FROM taskforge.tf_submit('noop', '{}', 'q_fac_filters_run');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_fac_filters_run'], 60);

-- Empty filters match nothing.
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => '{}', max_tasks => 10)), 0,
    'queues => {} matches nothing');
SELECT is((SELECT count(*)::int FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', task_types => '{}', max_tasks => 10)), 0,
    'task_types => {} matches nothing');

-- Both filters, in a call that also finalizes.
CREATE TEMP TABLE r1 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), ARRAY[(SELECT task_id FROM s)], ARRAY[1], ARRAY['succeeded'],
    queues => ARRAY['q_fac_filters_a'], task_types => ARRAY['fac.alpha'], max_tasks => 10);
SELECT is((SELECT array_agg(coalesce(k.label, r1.kind) ORDER BY r1.kind DESC) FROM r1 LEFT JOIN k USING (task_id)), ARRAY['finalized', 'a_alpha'],
    'queue a and type alpha: the finalized row, then only a_alpha (a_beta ranks higher but is another type)');
-- Queue filter only.
CREATE TEMP TABLE r2 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', queues => ARRAY['q_fac_filters_b', 'q_fac_none'], max_tasks => 10);
SELECT is((SELECT array_agg(k.label) FROM r2 JOIN k USING (task_id)), ARRAY['b_alpha', 'b_beta'], 'queues only: both of queue b, in priority order');
-- Task type filter only (any queue): only a_beta is left of type beta.
CREATE TEMP TABLE r3 AS SELECT * FROM taskforge.tf_finalize_and_claim((SELECT id FROM w), '{}', '{}', '{}', task_types => ARRAY['fac.beta'], max_tasks => 10);
SELECT is((SELECT array_agg(k.label) FROM r3 JOIN k USING (task_id)), ARRAY['a_beta'], 'task_types only: the remaining fac.beta task from any queue');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.tasks t USING (task_id) WHERE t.state = 'RUNNING'), 4, 'all four filtered tasks were claimed once');
SELECT is((SELECT count(*)::int FROM k JOIN taskforge.attempts USING (task_id)), 4, 'one attempt each');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
