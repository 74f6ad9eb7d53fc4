#!/usr/bin/env bash
# What each guarantee of TaskForge's tables costs the hot path: ceiling (d) (bench/pgbench/
# taskforge_tables_cycle.sql: one plain statement writing the rows tf_finalize_and_claim writes,
# one task a cycle, one pgbench client) on a scratch database, measured with the tables as they
# are, then after dropping their foreign keys, then also their table CHECK constraints, then
# also every index the cycle does not read (all but the primary keys and tasks_claim_queue_idx).
# Each step is cumulative; the whole ladder runs PASSES times (default 2), each in a new database.
# Prints tasks/s per step (pgbench's tps: one task a cycle). Never run it beside another benchmark.
#
#   bench/table_guarantees.sh [PASSES] [SECONDS]     # needs `make install` (the taskforge CLI) and pgbench
#
# Connection: PGHOST/PGPORT/PGUSER (default 127.0.0.1, 5432, postgres); a user who may create databases.
set -euo pipefail
cd "$(dirname "$0")/.."
passes=${1:-2}
seconds=${2:-10}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
db=taskforge_bench_guarantees
cycle=bench/pgbench/taskforge_tables_cycle.sql
run() {  # $1 = step name
    psql -qAtX -d "$db" -c "VACUUM ANALYZE" >/dev/null
    tps=$(pgbench -n -M prepared -c 1 -j 1 -T "$seconds" -f "$cycle" -D 'task_ids={}' -D batch=1 "$db" 2>/dev/null |
        sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')
    printf 'pass %s  %-52s %8.0f tasks/s\n' "$pass" "$1" "$tps"
}
drop_where() {  # $1 = a condition on pg_constraint (c) or pg_indexes (i): drop what matches
    psql -qAtX -d "$db" -v ON_ERROR_STOP=1 -c "DO \$\$ DECLARE r record; BEGIN $1 END \$\$" >/dev/null
}
for pass in $(seq "$passes"); do
    psql -qAtX -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    TASKFORGE_DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$db" .venv/bin/taskforge db migrate >/dev/null
    psql -qAtX -d "$db" -v ON_ERROR_STOP=1 -f bench/pgbench/taskforge_setup.sql \
        -c "INSERT INTO bench_pgbench_workers SELECT 0, taskforge.tf_register_worker(name => 'guarantees')" \
        -c "SELECT count(*) FROM generate_series(1, 12000 * $seconds) g
             CROSS JOIN LATERAL taskforge.tf_submit(task_type => 'noop', queue => 'bench', payload => jsonb_build_object('n', g))" >/dev/null
    run "the tables as they are"
    drop_where "FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
                 WHERE conrelid IN ('taskforge.tasks'::regclass, 'taskforge.attempts'::regclass) AND contype = 'f'
               LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP;"
    run "without foreign keys"
    drop_where "FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
                 WHERE conrelid IN ('taskforge.tasks'::regclass, 'taskforge.attempts'::regclass) AND contype = 'c'
               LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP;"
    run "without foreign keys and table CHECKs"
    drop_where "FOR r IN SELECT i.indexrelid::regclass AS ix FROM pg_index i
                 WHERE i.indrelid IN ('taskforge.tasks'::regclass, 'taskforge.attempts'::regclass) AND NOT i.indisprimary
                   AND i.indexrelid <> 'taskforge.tasks_claim_queue_idx'::regclass
               LOOP EXECUTE format('DROP INDEX %s', r.ix); END LOOP;"
    run "... and without the indexes the cycle does not read"
done
psql -qAtX -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null
