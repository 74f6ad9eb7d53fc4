#!/usr/bin/env bash
# Makes sure pgTAP is available for the test server (and pg_prove for DBAs), and that libfaketime
# is installed (the process tests run a worker with a shifted wall clock). Installs the missing
# Debian packages (postgresql-<major>-pgtap, libtap-parser-sourcehandler-pgtap-perl, faketime)
# when we run as root with apt-get; otherwise says what to install.
# Server: $TASKFORGE_TEST_DSN, else $TASKFORGE_TEST_LOCAL_DSN, else 127.0.0.1:5432 as postgres.
# When no server answers and TASKFORGE_TEST_DSN is unset, the suite starts its own
# (tests/helpers/suite_server.py) and loads pgTAP from its SQL script: then a pgtap--X.Y.Z.sql
# under /usr/share/postgresql/*/extension (or $TASKFORGE_PGTAP_SQL) is what must be there.
set -euo pipefail
dsn="${TASKFORGE_TEST_DSN:-${TASKFORGE_TEST_LOCAL_DSN:-host=127.0.0.1 port=5432 user=postgres dbname=postgres}}"

if ! command -v psql >/dev/null 2>&1; then
    echo "ensure-pgtap: psql not found; install the PostgreSQL client (Debian: postgresql-client)" >&2
    exit 1
fi
need=()
if psql "$dsn" -XAtqc 'SELECT 1' >/dev/null 2>&1; then
    available=$(psql "$dsn" -XAtqc "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'")
    major=$(psql "$dsn" -XAtqc "SELECT current_setting('server_version_num')::int / 10000")
    [[ "$available" == "1" ]] || need+=("postgresql-${major}-pgtap")
elif [[ -n "${TASKFORGE_TEST_DSN:-}" ]]; then
    echo "ensure-pgtap: cannot reach PostgreSQL at \$TASKFORGE_TEST_DSN ('$dsn')." >&2
    exit 1
else
    echo "ensure-pgtap: no PostgreSQL at '$dsn': the test suite starts one of its own" >&2
    available=script
    if [[ -z "${TASKFORGE_PGTAP_SQL:-}" ]] \
        && ! compgen -G "/usr/share/postgresql/*/extension/pgtap--[0-9]*.[0-9]*.[0-9]*.sql" >/dev/null; then
        available=0
        # The script of the newest packaged pgTAP (the package pulls in that major's server
        # files, which stay unused).
        package=$(apt-cache pkgnames postgresql- 2>/dev/null | grep -E '^postgresql-[0-9]+-pgtap$' | sort -V | tail -n1 || true)
        need+=("${package:-postgresql-15-pgtap}")
    fi
fi
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
    [[ "$available" != "0" ]] || exit 1
fi
