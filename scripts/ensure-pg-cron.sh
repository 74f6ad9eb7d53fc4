#!/usr/bin/env bash
# Makes sure pg_cron is installed for the PostgreSQL binaries the private test servers use
# (tests/processes/test_maintain_pg_cron.py runs CALL taskforge.tf_maintain() from pg_cron on a
# server of its own: shared_preload_libraries must name pg_cron). Installs the Debian package
# postgresql-<major>-cron for the newest /usr/lib/postgresql/<major> when it is missing and we run
# as root with apt-get; otherwise says what to install and fails.
set -euo pipefail
major=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n1 || true)
if [[ -z "$major" ]]; then
    echo "ensure-pg-cron: no PostgreSQL under /usr/lib/postgresql; the pg_cron test will be skipped" >&2
    exit 0
fi
[[ -f "/usr/lib/postgresql/$major/lib/pg_cron.so" ]] && exit 0
package="postgresql-$major-cron"
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-pg-cron: installing $package (for the in-database maintenance test)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$package" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq "$package" >/dev/null
    }
    [[ -f "/usr/lib/postgresql/$major/lib/pg_cron.so" ]] && exit 0
fi
echo "ensure-pg-cron: pg_cron not found. The in-database maintenance test needs it:" >&2
echo "  Debian/Ubuntu: sudo apt-get install $package, then run make test again." >&2
exit 1
