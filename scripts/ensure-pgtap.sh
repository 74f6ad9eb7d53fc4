#!/usr/bin/env bash
# Makes sure the pgTAP extension is available on the test server (and pg_prove for DBAs), and
# that libfaketime is installed (the integration tests run a worker with a shifted wall clock).
# Installs the missing Debian packages (postgresql-<major>-pgtap, libtap-parser-sourcehandler-pgtap-perl,
# faketime) when we run as root with apt-get; otherwise says what to install.
# Server: $TASKFORGE_TEST_DSN, else 127.0.0.1:5432 as postgres.
set -euo pipefail
dsn="${TASKFORGE_TEST_DSN:-host=127.0.0.1 port=5432 user=postgres dbname=postgres}"

if ! command -v psql >/dev/null 2>&1; then
    echo "ensure-pgtap: psql not found; install the PostgreSQL client (Debian: postgresql-client)" >&2
    exit 1
fi
if ! psql "$dsn" -XAtqc 'SELECT 1' >/dev/null 2>&1; then
    echo "ensure-pgtap: cannot reach PostgreSQL at '$dsn'." >&2
    echo "  Start a PostgreSQL 15+ server locally, or set TASKFORGE_TEST_DSN." >&2
    exit 1
fi
available=$(psql "$dsn" -XAtqc "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'")
major=$(psql "$dsn" -XAtqc "SELECT current_setting('server_version_num')::int / 10000")
need=()
[[ "$available" == "1" ]] || need+=("postgresql-${major}-pgtap")
command -v pg_prove >/dev/null 2>&1 || need+=("libtap-parser-sourcehandler-pgtap-perl")
compgen -G "/usr/lib/*/faketime/libfaketime.so.1" >/dev/null || compgen -G "/usr/lib/faketime/libfaketime.so.1" >/dev/null \
    || compgen -G "/usr/local/lib/faketime/libfaketime.so.1" >/dev/null || need+=("faketime")
((${#need[@]})) || exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-pgtap: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null
    }
else
    echo "ensure-pgtap: missing ${need[*]}. Install them (Debian/Ubuntu: sudo apt-get install ${need[*]})" >&2
    echo "  or pgTAP from https://pgtap.org for your server, then run make test again." >&2
    [[ "$available" == "1" ]] || exit 1
fi
