-- tf_claim takes due tasks in the order priority DESC, created_at, task_id, one call at a time and in one batch.
BEGIN;
SELECT plan(10);

CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_claim_order') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
-- Submitted in an order that differs from the claim order; created_at set explicitly below.
INSERT INTO o SELECT 'low', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', -5);
INSERT INTO o SELECT 'mid_early', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', 0);
INSERT INTO o SELECT 'tie_first', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', 0);
INSERT INTO o SELECT 'tie_second', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', 0);
INSERT INTO o SELECT 'hi_late', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', 10);
INSERT INTO o SELECT 'hi_early', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order', 10);
-- tie_second is updated first so that its row comes before tie_first in the heap.
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:02+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'tie_second';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:02+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'tie_first';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:03+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'hi_late';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:01+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'hi_early';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:00+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'mid_early';
UPDATE taskforge.tasks t SET created_at = '2019-01-01 00:00:00+00' FROM o WHERE o.task_id = t.task_id AND o.label = 'low';

SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'hi_early', '1st claim: highest priority, earliest created');
SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'hi_late', '2nd claim: highest priority, later created');
SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'mid_early', '3rd claim: priority 0, earliest created (older than the high-priority tasks is not enough)');
SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'tie_first', '4th claim: equal priority and created_at, lower task_id first');
SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'tie_second', '5th claim: the higher task_id of the tie');
SELECT is((SELECT o.label FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order']) JOIN o USING (task_id)),
    'low', '6th claim: the negative priority comes last although it is the oldest');
SELECT is((SELECT count(*)::int FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order'])), 0,
    '7th claim: nothing left');

-- The same set claimed in one call comes back in claim order.
CREATE TEMP TABLE b (label text, task_id bigint);
INSERT INTO b SELECT 'low', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', -5);
INSERT INTO b SELECT 'mid_early', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', 0);
INSERT INTO b SELECT 'tie_first', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', 0);
INSERT INTO b SELECT 'tie_second', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', 0);
INSERT INTO b SELECT 'hi_late', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', 10);
INSERT INTO b SELECT 'hi_early', task_id FROM taskforge.tf_submit('noop', '{}', 'q_claim_order_batch', 10);
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:02+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'tie_second';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:02+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'tie_first';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:03+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'hi_late';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:01+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'hi_early';
UPDATE taskforge.tasks t SET created_at = '2020-01-01 00:00:00+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'mid_early';
UPDATE taskforge.tasks t SET created_at = '2019-01-01 00:00:00+00' FROM b WHERE b.task_id = t.task_id AND b.label = 'low';

CREATE TEMP TABLE batch AS
    SELECT row_number() OVER () AS pos, c.* FROM taskforge.tf_claim((SELECT id FROM w), ARRAY['q_claim_order_batch'], max_tasks => 4) c;
SELECT is((SELECT array_agg(b.label ORDER BY batch.pos) FROM batch JOIN b USING (task_id)),
    ARRAY['hi_early', 'hi_late', 'mid_early', 'tie_first'], 'a batch of 4 takes the first four in claim order and returns them in order');
SELECT is((SELECT array_agg(b.label ORDER BY b.label) FROM taskforge.tasks t JOIN b USING (task_id) WHERE t.state = 'QUEUED'),
    ARRAY['low', 'tie_second'], 'the last two in claim order are left QUEUED');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
