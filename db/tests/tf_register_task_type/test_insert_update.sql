-- tf_register_task_type inserts a type with its policy, and a second call updates the policy in place (a NULL description keeps the old one).
BEGIN;
SELECT plan(19);

CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS at;
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.alpha', 1.5, 60, 0.1, 'first')$$, 'register regtype.alpha');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS at;
CREATE TEMP TABLE v1 AS SELECT * FROM taskforge.task_types WHERE task_type = 'regtype.alpha';
SELECT is((SELECT count(*)::int FROM v1), 1, 'one row exists');
SELECT is((SELECT backoff_base_seconds FROM v1), 1.5::float8, 'the base is stored');
SELECT is((SELECT backoff_cap_seconds FROM v1), 60::float8, 'the cap is stored');
SELECT is((SELECT backoff_jitter FROM v1), 0.1::float8, 'the jitter is stored');
SELECT is((SELECT description FROM v1), 'first', 'the description is stored');
SELECT ok((SELECT created_at BETWEEN (SELECT at FROM t0) AND (SELECT at FROM t1) AND updated_at = created_at FROM v1),
    'created_at = updated_at = database time of the call');

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.alpha', 3, 90, 0)$$, 'register regtype.alpha again with another policy');
CREATE TEMP TABLE v2 AS SELECT * FROM taskforge.task_types WHERE task_type = 'regtype.alpha';
SELECT is((SELECT count(*)::int FROM v2), 1, 'still one row');
SELECT ok((SELECT backoff_base_seconds = 3 AND backoff_cap_seconds = 90 AND backoff_jitter = 0 FROM v2), 'the policy is updated');
SELECT is((SELECT description FROM v2), 'first', 'a NULL description keeps the old one');
SELECT is((SELECT created_at FROM v2), (SELECT created_at FROM v1), 'created_at is kept');
SELECT ok((SELECT v2.updated_at > v1.updated_at FROM v1, v2), 'updated_at moves on');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.alpha', description => 'second')$$, 'register regtype.alpha with only a description');
SELECT ok((SELECT description = 'second' AND backoff_base_seconds = 2 AND backoff_cap_seconds = 300 AND backoff_jitter = 0.2
             FROM taskforge.task_types WHERE task_type = 'regtype.alpha'),
    'the description is replaced and omitted policy arguments take their defaults');

SELECT lives_ok($$SELECT taskforge.tf_register_task_type('regtype.beta')$$, 'register regtype.beta with defaults');
SELECT ok((SELECT backoff_base_seconds = 2 AND backoff_cap_seconds = 300 AND backoff_jitter = 0.2 AND description IS NULL
             FROM taskforge.task_types WHERE task_type = 'regtype.beta'), 'the defaults are base 2 s, cap 300 s, jitter 0.2, no description');
SELECT lives_ok($$SELECT taskforge.tf_register_task_type(rpad('regtype.long_name-0', 63, 'x'))$$, 'a 63-character name with . _ - and digits is accepted');
SELECT is_empty('SELECT * FROM taskforge.tf_invariant_violations', 'no invariant violations');
SELECT * FROM finish();
ROLLBACK;
