-- _tf_claim_keyed (through tf_claim): keyed and plain tasks compete in one claim order (priority DESC, created_at, task_id): with max_tasks 1 the older of two equal-priority tasks wins whichever is keyed, a higher priority wins whichever is older; a batch returns the first max_tasks of both in claim order; a keyed task that loses spends no token and no slot.
BEGIN;
SELECT plan(10);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('w_keyed_claim_order') AS id;
CREATE TEMP TABLE o (label text, task_id bigint);
CREATE FUNCTION pg_temp.claim_labels(p_queue text, p_max int DEFAULT 1) RETURNS text LANGUAGE sql AS $f$
    SELECT coalesce(string_agg(o.label, ',' ORDER BY c.pos), '')
      FROM (SELECT row_number() OVER () AS pos, x.task_id
              FROM taskforge.tf_claim((SELECT id FROM w), ARRAY[p_queue], max_tasks => p_max) x) c JOIN o USING (task_id);
$f$;

-- Equal priority: the older wins, keyed or not.
INSERT INTO o SELECT 'plain_old', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_tie');
INSERT INTO o SELECT 'keyed_new', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_tie', rate_key => 'rk_kco_tie');
SELECT is(pg_temp.claim_labels('q_kco_tie'), 'plain_old', 'a plain older task beats a keyed newer one of equal priority');
SELECT is(pg_temp.claim_labels('q_kco_tie'), 'keyed_new', 'the keyed one comes next');
INSERT INTO o SELECT 'keyed_old', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_tie2', concurrency_key => 'ck_kco_tie2');
INSERT INTO o SELECT 'plain_new', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_tie2');
SELECT is(pg_temp.claim_labels('q_kco_tie2'), 'keyed_old', 'a keyed older task beats a plain newer one of equal priority');

-- Priority first, across keyed and plain.
INSERT INTO o SELECT 'plain_low_old', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_prio', priority => 1);
INSERT INTO o SELECT 'keyed_high_new', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_prio', priority => 5,
                                                                         ordering_key => 'ok_kco_prio');
SELECT is(pg_temp.claim_labels('q_kco_prio'), 'keyed_high_new', 'a keyed task of higher priority beats an older plain one');
INSERT INTO o SELECT 'keyed_low_old', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_prio2', priority => 1,
                                                                        rate_key => 'rk_kco_prio2');
INSERT INTO o SELECT 'plain_high_new', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_prio2', priority => 5);
SELECT is(pg_temp.claim_labels('q_kco_prio2'), 'plain_high_new', 'a plain task of higher priority beats an older keyed one');

-- A batch: the first three of five in claim order, returned in that order.
INSERT INTO o SELECT 'b_plain_p0', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_batch', priority => 0);
INSERT INTO o SELECT 'b_keyed_p3', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_batch', priority => 3,
                                                                     concurrency_key => 'ck_kco_batch');
INSERT INTO o SELECT 'b_plain_p3', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_batch', priority => 3);
INSERT INTO o SELECT 'b_keyed_p9', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_batch', priority => 9,
                                                                     rate_key => 'rk_kco_batch');
INSERT INTO o SELECT 'b_keyed_p0', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_batch', priority => 0,
                                                                     ordering_key => 'ok_kco_batch');
SELECT is(pg_temp.claim_labels('q_kco_batch', 3), 'b_keyed_p9,b_keyed_p3,b_plain_p3',
          'a claim of three takes the first three of keyed and plain in claim order');
SELECT is(pg_temp.claim_labels('q_kco_batch', 3), 'b_plain_p0,b_keyed_p0', 'the next claim the other two');

-- The loser of the competition keeps its token and its key's slot.
INSERT INTO o SELECT 'plain_first', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_loser');
INSERT INTO o SELECT 'keyed_loser', task_id FROM taskforge.tf_submit('noop', '{}', 'q_kco_loser', rate_key => 'rk_kco_loser',
                                                                      concurrency_key => 'ck_kco_loser');
DO $$ BEGIN PERFORM taskforge.tf_set_rate_limit('rk_kco_loser', 0.001, 1); END $$;
DO $$ BEGIN PERFORM taskforge.tf_set_concurrency_limit('ck_kco_loser', 1); END $$;
SELECT is(pg_temp.claim_labels('q_kco_loser'), 'plain_first', 'the older plain task wins');
SELECT ok((SELECT r.tokens = 1 AND k.last_claimed_at IS NULL
             FROM taskforge.rate_limits r, taskforge.concurrency_keys k
            WHERE r.rate_key = 'rk_kco_loser' AND k.concurrency_key = 'ck_kco_loser'),
          'the keyed task that lost spent no token and got no rotation stamp');
SELECT is(pg_temp.claim_labels('q_kco_loser'), 'keyed_loser', 'and starts on the next claim');
SELECT * FROM finish();
ROLLBACK;
