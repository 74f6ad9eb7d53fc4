#!/usr/bin/env bash
# Makes sure the tools of the chaos suite's network partition are installed
# (tests/chaos/test_partition.py: network namespaces and a veth pair of its own with `ip`, from
# iproute2, and a silent partition with `iptables -j DROP` inside the worker's namespace).
# Installs the Debian packages `iproute2` and `iptables` when they are missing and we run as
# root with apt-get; otherwise says what is missing and fails. `make chaos` goes on without them:
# that one test then skips, saying why (it also skips without CAP_NET_ADMIN, which root in some
# containers lacks). Nothing is configured here: the test adds and removes its own rules, only
# inside namespaces it creates.
set -euo pipefail
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-netns-tools: installing ${missing[*]} (for the chaos suite's network partition)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
    }
    command -v ip >/dev/null 2>&1 && command -v iptables >/dev/null 2>&1 && exit 0
fi
echo "ensure-netns-tools: missing ${missing[*]} (commands: ip, iptables). The network-partition" >&2
echo "  chaos test (tests/chaos/test_partition.py) needs them, and root (CAP_NET_ADMIN) to use them:" >&2
echo "  Debian/Ubuntu: sudo apt-get install ${missing[*]}, then run make chaos as root." >&2
exit 1
