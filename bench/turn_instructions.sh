#!/usr/bin/env bash
# CPU instructions a worker turn costs the database backend, counted by callgrind: repeatable
# whatever else the machine is doing (a shared 2-core machine swings wall-clock figures by 20 %
# and more), so each change to the hot path can be measured against the one before it.
#
#   bench/turn_instructions.sh [single|batch|prune] [TURNS]
#
# single  each turn is one tf_finalize_and_claim that finalizes the task claimed by the previous
#         turn and claims the next (what a one-slot worker sends);
# batch   each turn finalizes the 64 tasks of the previous turn and claims 64;
# prune   retention instead of a worker turn: every task has run once and SUCCEEDED before the
#         count starts, and each turn is tf_prune(0, 100), deleting 100 of them with their attempts.
# TURNS   measured turns (default 300 single, 100 batch and prune). Prints instructions per turn
#         (and per task for batch and prune): the count for 20 + TURNS turns minus the count for
#         20, divided by TURNS.
#
# How: a private PostgreSQL cluster (initdb into $TF_CG_DIR, default /tmp/taskforge-callgrind,
# port $TF_CG_PORT, default 5449) is migrated with this checkout's schema (`python -m
# taskforge.cli db migrate`; or with the SQL script named by $TF_CG_SCHEMA_SQL instead, e.g. a
# variant of the schema built by bench/partition_cost.py), filled with 3,000 (single), 40,000
# (batch) or (20 + TURNS) x 100 (prune) noop tasks, vacuumed, then restarted under `valgrind
# --tool=callgrind --trace-children=yes`; one psql session runs the turns through a small plpgsql
# driver (cg_turn, created here), and the count of that backend is read from its callgrind file.
# The driver's own cost is the same in every measurement; compare counts, not absolute figures.
# TF_CG_PARTITION="SIZE AHEAD" converts the database to the partitioned history right after the
# migration (tf_partition_history(SIZE, AHEAD): the first range, then AHEAD ranges of SIZE ids;
# the fill must fit in them, e.g. "100000 1" for two partitions, "20000 3" for four).
#
# Needs valgrind, PostgreSQL 15's server binaries ($PGBIN, default /usr/lib/postgresql/15/bin)
# and, when run as root, a postgres system user to own the cluster (PostgreSQL refuses root).
set -euo pipefail
MODE=${1:-single}
case $MODE in single) TURNS=${2:-300}; FILL=3000; N=1 ;; batch) TURNS=${2:-100}; FILL=40000; N=64 ;;
    prune) TURNS=${2:-100}; N=100; FILL=$(( (20 + TURNS) * N )) ;;
    *) echo "usage: $0 [single|batch|prune] [TURNS]" >&2; exit 2 ;; esac
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DIR=${TF_CG_DIR:-/tmp/taskforge-callgrind}
PORT=${TF_CG_PORT:-5449}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
OWNER=$(id -un); [[ $(id -u) -eq 0 ]] && OWNER=postgres
as_owner() { if [[ $(id -u) -eq 0 ]]; then su "$OWNER" -c "$*"; else bash -c "$*"; fi; }
DSN="host=127.0.0.1 port=$PORT user=postgres dbname=tfcg"
psql_() { psql -X -q -h 127.0.0.1 -p "$PORT" -U postgres "$@"; }

mkdir -p "$DIR" && chmod 777 "$DIR"
if [[ ! -d $DIR/data ]]; then
    as_owner "$PGBIN/initdb -D $DIR/data -A trust -U postgres" >/dev/null
    printf "port = %s\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nautovacuum = off\n" \
        "$PORT" "$DIR" >> "$DIR/data/postgresql.conf"
fi
start() { as_owner "$PGBIN/pg_ctl -D $DIR/data -l $DIR/log -w start" >/dev/null; }
stop() { as_owner "$PGBIN/pg_ctl -D $DIR/data -m fast -w stop" >/dev/null 2>&1 || true; }
trap stop EXIT

# One run: a fresh database, TURNS_RUN turns under callgrind; prints that backend's count.
run() {
    local turns_run=$1
    stop; start
    psql_ -d postgres -c 'DROP DATABASE IF EXISTS tfcg' -c 'CREATE DATABASE tfcg' >/dev/null
    if [[ -n ${TF_CG_SCHEMA_SQL:-} ]]; then
        psql_ -d tfcg -v ON_ERROR_STOP=1 -f "$TF_CG_SCHEMA_SQL" >/dev/null
    else
        "$PY" -m taskforge.cli db migrate --dsn "$DSN" >/dev/null
    fi
    if [[ -n ${TF_CG_PARTITION:-} ]]; then
        read -r size ahead <<< "$TF_CG_PARTITION"
        psql_ -d tfcg -v ON_ERROR_STOP=1 -c "SELECT taskforge.tf_partition_history($size, $ahead)" >/dev/null
    fi
    psql_ -d tfcg >/dev/null <<SQL
CREATE FUNCTION public.cg_turn(n int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE t bigint[] := coalesce(nullif(current_setting('cg.tasks', true), '')::bigint[], '{}');
        a int[] := coalesce(nullif(current_setting('cg.atts', true), '')::int[], '{}');
        w uuid := current_setting('cg.worker')::uuid; r record;
BEGIN
  SELECT array_agg(c.task_id) AS ids, array_agg(c.attempt_number) AS atts INTO r
    FROM taskforge.tf_finalize_and_claim(worker_id => w, task_ids => t, attempt_numbers => a,
             outcomes => array_fill('succeeded'::text, ARRAY[cardinality(t)]), queues => ARRAY['bench'],
             max_tasks => n) c
   WHERE c.kind = 'claimed';
  PERFORM set_config('cg.tasks', r.ids::text, false), set_config('cg.atts', r.atts::text, false);
END \$\$;
SELECT taskforge.tf_register_worker(name => 'cg', queues => ARRAY['bench']);
SELECT count(*) FROM generate_series(1, $FILL) g
 CROSS JOIN LATERAL taskforge.tf_submit(task_type => 'noop', queue => 'bench', payload => jsonb_build_object('n', g));
SQL
    if [[ $MODE == prune ]]; then
        # Run every task once (claims and finalizes of 1,000 at a time), so all are SUCCEEDED.
        psql_ -d tfcg -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT set_config('cg.worker', (SELECT worker_id::text FROM taskforge.workers LIMIT 1), false);
SELECT public.cg_turn(1000) FROM generate_series(1, $FILL / 1000 + 2);
SQL
    fi
    psql_ -d tfcg -c 'VACUUM ANALYZE' -c 'CHECKPOINT' >/dev/null
    stop
    rm -f "$DIR"/cg.*
    as_owner "cd $DIR && nohup valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$DIR/cg.%p \
        $PGBIN/postgres -D $DIR/data > $DIR/valgrind.log 2>&1 &"
    for _ in $(seq 120); do pg_isready -q -h 127.0.0.1 -p "$PORT" && break; sleep 1; done
    local pid
    pid=$({ echo "SELECT set_config('cg.worker', (SELECT worker_id::text FROM taskforge.workers LIMIT 1), false);"
            if [[ $MODE == prune ]]; then turn="SELECT taskforge.tf_prune(0, $N);"; else turn="SELECT public.cg_turn($N);"; fi
            for _ in $(seq "$turns_run"); do echo "$turn"; done
            echo "SELECT 'backend:' || pg_backend_pid();"; } | psql_ -d tfcg -At | sed -n 's/^backend://p')
    stop; sleep 2
    awk '/^summary:/ {print $2}' "$DIR/cg.$pid"
}

base=$(run 20)
total=$(run $((20 + TURNS)))
per_turn=$(( (total - base) / TURNS ))
if [[ $MODE != single ]]; then
    echo "$MODE: $per_turn instructions per turn of $N, $(( per_turn / N )) per task ($TURNS turns)"
else
    echo "$MODE: $per_turn instructions per turn ($TURNS turns)"
fi
