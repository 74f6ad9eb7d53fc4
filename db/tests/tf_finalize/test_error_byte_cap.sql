-- The 16 KiB cap on stored errors counts bytes of JSON text, so characters that JSON escapes (six bytes each) or multi-byte characters cannot push an error past it.
BEGIN;
SELECT plan(7);
CREATE TEMP TABLE w AS SELECT taskforge.tf_register_worker('cap-bytes') AS id;
SELECT ok((SELECT created FROM taskforge.tf_submit('fail', queue => 'q_cap_bytes')), 'submitted');
CREATE TEMP TABLE c AS SELECT * FROM taskforge.tf_claim(worker_id => (SELECT id FROM w), queues => ARRAY['q_cap_bytes']);
SELECT is((SELECT accepted FROM taskforge.tf_finalize((SELECT task_id FROM c), (SELECT id FROM w), 1, 'failed',
             error => jsonb_build_object('type', 'X', 'message', repeat(chr(1), 100000)))), true, 'finalize accepted');
SELECT cmp_ok((SELECT octet_length(last_error::text) FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM c)), '<=', 16384,
              'escaped control characters: the stored task error fits in 16 KiB');
SELECT cmp_ok((SELECT octet_length(error::text) FROM taskforge.attempts WHERE task_id = (SELECT task_id FROM c)), '<=', 16384,
              'the attempt error fits too');
SELECT is((SELECT last_error ->> 'type' FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM c)), 'X', 'the error type is kept');
SELECT ok((SELECT (last_error ->> 'truncated')::boolean AND length(last_error ->> 'message') > 0
             FROM taskforge.tasks WHERE task_id = (SELECT task_id FROM c)), 'the message is cut, not dropped, and marked truncated');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
