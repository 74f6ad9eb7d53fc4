-- tf_set_queue_limit: candidates of limited and unlimited queues are merged in claim order (priority DESC, created_at, task_id); a paused limited queue gives nothing.
BEGIN;
SELECT plan(3);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_limit_order') AS id;
CREATE TEMP TABLE t (label text, task_id bigint);
INSERT INTO t SELECT 'free_low', task_id FROM taskforge.tf_submit('noop', '{}', 'q_lo_free', priority => 1);
INSERT INTO t SELECT 'limited_high', task_id FROM taskforge.tf_submit('noop', '{}', 'q_lo_limited', priority => 9);
INSERT INTO t SELECT 'limited_high2', task_id FROM taskforge.tf_submit('noop', '{}', 'q_lo_limited', priority => 9);
INSERT INTO t SELECT 'free_mid', task_id FROM taskforge.tf_submit('noop', '{}', 'q_lo_free', priority => 5);
DO $$ BEGIN PERFORM taskforge.tf_set_queue_limit('q_lo_limited', 1); END $$;
SELECT results_eq($$SELECT t.label FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 2) c JOIN t USING (task_id)$$,
                  ARRAY['limited_high', 'free_mid'], 'one limited task (its limit) then the best unlimited one, in claim order');
DO $$ BEGIN PERFORM taskforge.tf_set_queue_limit('q_lo_limited', 5); END $$;
DO $$ BEGIN PERFORM taskforge.tf_pause_queue('q_lo_limited'); END $$;
SELECT results_eq($$SELECT t.label FROM taskforge.tf_claim((SELECT id FROM w), NULL, max_tasks => 5) c JOIN t USING (task_id)$$,
                  ARRAY['free_low'], 'a paused limited queue gives nothing');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
