-- tf_invariant_violations reports each kind of broken row: crafted inside this transaction after dropping the CHECK constraints that would refuse them (all rolled back).
BEGIN;
SELECT plan(19);
ALTER TABLE taskforge.tasks DROP CONSTRAINT tasks_row_rules;
ALTER TABLE taskforge.attempts DROP CONSTRAINT attempts_row_rules;
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('view-inv-w1') AS id, taskforge.tf_register_worker('view-inv-w2') AS id2;
CREATE TEMP TABLE k AS
SELECT s.name, (SELECT task_id FROM taskforge.tf_submit('noop', payload => jsonb_build_object('case', s.name), queue => 'view_inv')) AS task_id
  FROM (VALUES ('healthy'), ('no_lease'), ('lease_on_queued'), ('gap'), ('over_budget'), ('two_running'), ('terminal_running_attempt'),
               ('running_attempt_failed'), ('running_other_owner'), ('queued_no_budget'), ('succeeded_failed_attempt'),
               ('retrying_abandoned'), ('terminal_no_finish'), ('attempt_no_finish'), ('abandoned_early')) s(name);
CREATE TEMP TABLE clk AS SELECT clock_timestamp() AS now;

-- healthy: claimed and finished through the API.
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['view_inv'], max_tasks => 1);
CREATE TEMP TABLE f AS SELECT * FROM taskforge.tf_finalize((SELECT task_id FROM c), (SELECT id FROM w), 1, 'succeeded');
SELECT results_eq($$SELECT task_id, accepted FROM c JOIN f ON true$$, $$SELECT task_id, true FROM k WHERE name = 'healthy'$$,
                  'setup: the healthy task went through claim and finalize');

-- Attempt rows: (name, attempt_number, worker, state, finished?) -- finished attempts end at clk.now, leases end before that.
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, outcome, started_at, lease_expires_at, finished_at)
SELECT k.task_id, a.n, CASE WHEN a.other THEN (SELECT id2 FROM w) ELSE (SELECT id FROM w) END, a.state,
       CASE a.state WHEN 'RUNNING' THEN NULL WHEN 'ABANDONED' THEN 'lease_expired' WHEN 'SUCCEEDED' THEN 'succeeded' ELSE 'failed' END,
       (SELECT now FROM clk) - interval '1 minute',
       (SELECT now FROM clk) + CASE WHEN a.name = 'abandoned_early' THEN interval '1 minute' ELSE interval '-10 seconds' END,
       CASE WHEN a.state = 'RUNNING' OR a.name = 'attempt_no_finish' THEN NULL ELSE (SELECT now FROM clk) END
  FROM (VALUES ('no_lease', 1, 'RUNNING', false),
               ('gap', 1, 'FAILED', false), ('gap', 3, 'FAILED', false),
               ('over_budget', 1, 'FAILED', false), ('over_budget', 2, 'FAILED', false),
               ('two_running', 1, 'RUNNING', false), ('two_running', 2, 'RUNNING', false),
               ('terminal_running_attempt', 1, 'RUNNING', false),
               ('running_attempt_failed', 1, 'FAILED', false),
               ('running_other_owner', 1, 'RUNNING', true),
               ('queued_no_budget', 1, 'ABANDONED', false),
               ('succeeded_failed_attempt', 1, 'FAILED', false),
               ('retrying_abandoned', 1, 'ABANDONED', false),
               ('terminal_no_finish', 1, 'SUCCEEDED', false),
               ('attempt_no_finish', 1, 'FAILED', false),
               ('abandoned_early', 1, 'ABANDONED', false)) a(name, n, state, other)
  JOIN k USING (name);

-- Task rows: state, attempt_count, max_attempts, owner, lease, finished_at.
UPDATE taskforge.tasks t
   SET state = v.state, attempt_count = v.cnt, max_attempts = v.budget,
       owner_worker_id = CASE WHEN v.owned THEN (SELECT id FROM w) END,
       lease_expires_at = CASE WHEN v.leased THEN (SELECT now FROM clk) + interval '1 hour' END,
       finished_at = CASE WHEN v.finished THEN (SELECT now FROM clk) END
  FROM (VALUES ('no_lease', 'RUNNING', 1, 3, true, false, false),
               ('lease_on_queued', 'QUEUED', 0, 3, false, true, false),
               ('gap', 'FAILED', 3, 3, false, false, true),
               ('over_budget', 'FAILED', 2, 1, false, false, true),
               ('two_running', 'RUNNING', 2, 3, true, true, false),
               ('terminal_running_attempt', 'FAILED', 1, 3, false, false, true),
               ('running_attempt_failed', 'RUNNING', 1, 3, true, true, false),
               ('running_other_owner', 'RUNNING', 1, 3, true, true, false),
               ('queued_no_budget', 'QUEUED', 1, 1, false, false, false),
               ('succeeded_failed_attempt', 'SUCCEEDED', 1, 3, false, false, true),
               ('retrying_abandoned', 'RETRYING', 1, 3, false, false, false),
               ('terminal_no_finish', 'SUCCEEDED', 1, 3, false, false, false),
               ('attempt_no_finish', 'FAILED', 1, 3, false, false, true),
               ('abandoned_early', 'QUEUED', 1, 3, false, false, false)) v(name, state, cnt, budget, owned, leased, finished)
  JOIN k USING (name)
 WHERE t.task_id = k.task_id;

CREATE TEMP TABLE found AS
SELECT k.name, v.rule, v.attempt_number FROM taskforge.tf_invariant_violations v JOIN k USING (task_id);

SELECT is_empty($$SELECT * FROM found WHERE name = 'healthy'$$, 'a task handled through the API has no violation');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'no_lease'$$, ARRAY['running task without owner or lease'],
                  'RUNNING without a lease');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'lease_on_queued'$$, ARRAY['owner or lease on a task that is not running'],
                  'a lease on a QUEUED task');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'gap'$$, ARRAY['attempt numbers with gaps or not matching attempt_count'],
                  'a gap in attempt numbers (1, 3)');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'over_budget'$$, ARRAY['more attempts than budget'],
                  'more attempts than max_attempts');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'two_running'$$, ARRAY['more than one running attempt'],
                  'two RUNNING attempts of one task');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'terminal_running_attempt'$$, ARRAY['task not running but has a running attempt'],
                  'a terminal task with a RUNNING attempt');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'running_attempt_failed'$$,
                  ARRAY['running task whose current attempt is not running or not its owner''s'],
                  'a RUNNING task whose current attempt is not running');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'running_other_owner'$$,
                  ARRAY['running task whose current attempt is not running or not its owner''s'],
                  'a RUNNING task whose current attempt belongs to another worker');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'queued_no_budget'$$, ARRAY['queued or retrying task without attempts left'],
                  'a QUEUED task without attempts left');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'succeeded_failed_attempt'$$, ARRAY['succeeded task whose last attempt did not succeed'],
                  'a SUCCEEDED task whose last attempt FAILED');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'retrying_abandoned'$$, ARRAY['retrying task whose last attempt did not fail'],
                  'a RETRYING task whose last attempt was ABANDONED');
SELECT results_eq($$SELECT rule FROM found WHERE name = 'terminal_no_finish'$$,
                  ARRAY['terminal task without finished_at, or finished_at on a live task'], 'a SUCCEEDED task without finished_at');
SELECT results_eq($$SELECT rule, attempt_number FROM found WHERE name = 'attempt_no_finish'$$,
                  $$VALUES ('attempt final state without finish time, or running with one'::text, 1)$$,
                  'a FAILED attempt without finished_at (reported with its attempt number)');
SELECT results_eq($$SELECT rule, attempt_number FROM found WHERE name = 'abandoned_early'$$,
                  $$VALUES ('abandoned attempt recovered before its lease expired'::text, 1)$$,
                  'an attempt ABANDONED before its lease expired (reported with its attempt number)');
SELECT ok((SELECT bool_and(detail IS NOT NULL AND detail <> '') FROM taskforge.tf_invariant_violations WHERE task_id IN (SELECT task_id FROM k)),
          'every violation carries a detail');

-- Restore: delete the broken rows; the view is empty again.
DELETE FROM taskforge.tasks WHERE task_id IN (SELECT task_id FROM k WHERE name <> 'healthy');
SELECT isnt_empty($$SELECT * FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM k WHERE name = 'healthy')$$, 'the healthy task is kept');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
