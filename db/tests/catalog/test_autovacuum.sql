-- Catalog contract: the hot tables carry their own autovacuum settings (docs/operations.md), so a busy queue is vacuumed after a small fixed amount of churn rather than the server's 20%.
BEGIN;
SELECT plan(5);
-- settings(table): the table's storage options as a sorted text array.
CREATE FUNCTION pg_temp.settings(p_table text)
RETURNS text[]
LANGUAGE sql
AS $helper$
    SELECT array_agg(o ORDER BY o) FROM pg_catalog.pg_class c, unnest(c.reloptions) o
     WHERE c.oid = ('taskforge.' || p_table)::regclass;
$helper$;

SELECT is(pg_temp.settings('tasks'), ARRAY['autovacuum_analyze_scale_factor=0.02', 'autovacuum_vacuum_cost_delay=0',
    'autovacuum_vacuum_insert_scale_factor=0.05', 'autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000'],
    'tasks: vacuum after 1% + 1000 dead rows, no cost pauses');
SELECT is(pg_temp.settings('attempts'), ARRAY['autovacuum_analyze_scale_factor=0.05', 'autovacuum_vacuum_cost_delay=0',
    'autovacuum_vacuum_insert_scale_factor=0.05', 'autovacuum_vacuum_scale_factor=0.02', 'autovacuum_vacuum_threshold=1000'],
    'attempts: vacuum after 2% + 1000 dead rows or 5% inserted, no cost pauses');
SELECT is(pg_temp.settings('workers'), ARRAY['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=200'],
    'workers: vacuum after 200 dead rows (heartbeats)');
SELECT is(pg_temp.settings('schedulers'), ARRAY['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=200'],
    'schedulers: vacuum after 200 dead rows (heartbeats)');
SELECT is(pg_temp.settings('queues'), ARRAY['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=200'],
    'queues: vacuum after 200 dead rows');
SELECT * FROM finish();
ROLLBACK;
