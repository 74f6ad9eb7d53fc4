#!/usr/bin/env bash
# Makes sure PgBouncer is installed for the transaction-pooling tests
# (tests/processes/test_pgbouncer.py starts a PgBouncer of its own on a free loopback port; so
# does `taskforge bench pooler`). Installs the Debian package `pgbouncer` when it is missing and we
# run as root with apt-get; otherwise says what to install and fails, so `make test` stops before
# tests that cannot run. The package's own service is not used (nor started here).
set -euo pipefail
command -v pgbouncer >/dev/null 2>&1 && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-pgbouncer: installing pgbouncer (for the transaction-pooling tests)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq pgbouncer >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq pgbouncer >/dev/null
    }
    command -v pgbouncer >/dev/null 2>&1 && exit 0
fi
echo "ensure-pgbouncer: pgbouncer not found. The transaction-pooling tests need it:" >&2
echo "  Debian/Ubuntu: sudo apt-get install pgbouncer, then run make test again." >&2
exit 1
