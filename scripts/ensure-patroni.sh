#!/usr/bin/env bash
# Makes sure the failover rig's packages are installed (make ha / make ha-short, tests/ha/:
# etcd and two Patroni nodes of the test's own on loopback ports). Installs the Debian packages
# `patroni` (3.0; it brings python3-etcd and the Python modules it needs) and `etcd-server`
# (3.4) when a command is missing and we run as root with apt-get; otherwise says what to
# install and fails, so make ha stops before a rig that cannot start. The packages' own services
# are not used: if the package's postinst started an etcd on the default ports (2379/2380), it is
# stopped again here, so that nothing of ours keeps running beside the rig. Patroni runs the
# PostgreSQL server binaries of /usr/lib/postgresql/<version>/bin (as make chaos does):
# `postgresql-15` is installed too when no version 15 or later is there.
set -euo pipefail
missing=()
command -v patroni >/dev/null 2>&1 || missing+=(patroni)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
have_server=0
for initdb in /usr/lib/postgresql/*/bin/initdb; do
    version=$(basename "$(dirname "$(dirname "$initdb")")")
    [[ -x $initdb && $version =~ ^[0-9]+$ && $version -ge 15 ]] && have_server=1
done
[[ $have_server -eq 1 ]] || missing+=(postgresql-15)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-patroni: installing ${missing[*]} (for the failover rig, make ha)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    }
    # No systemd here: a postinst may have started the packaged etcd through its init script.
    if [[ -x /etc/init.d/etcd ]]; then
        /etc/init.d/etcd stop >/dev/null 2>&1 || true
    fi
    command -v patroni >/dev/null 2>&1 && command -v etcd >/dev/null 2>&1 \
        && compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && exit 0
fi
echo "ensure-patroni: missing ${missing[*]} (commands: patroni, etcd, PostgreSQL's initdb). The failover" >&2
echo "  rig (make ha, tests/ha/) needs them: Debian/Ubuntu: sudo apt-get install ${missing[*]}, then run make ha again." >&2
exit 1
