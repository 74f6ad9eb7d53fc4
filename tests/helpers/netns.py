"""Two network namespaces of the test's own, joined by one veth pair, and a silent partition
between them (tests/chaos/test_partition.py; docs/chaos.md, "Network partition").

:class:`NetnsPair` creates the namespaces ``tfd-<hex>`` (the database's) and ``tfw-<hex>`` (a
worker's), a veth pair with one end in each, ``10.231.N.1/30`` on the database's end and
``10.231.N.2/30`` on the worker's (N from the same random hex), and loopback up in both. Nothing
is added to the root namespace, so the host's own interfaces, routes and firewall are never
touched. :meth:`partition` appends ``iptables -j DROP`` rules for INPUT and OUTPUT inside the
worker's namespace: every packet between the two ends is dropped, with no RST and no FIN, so the
worker's TCP connections just hang; :meth:`heal` deletes them. :meth:`destroy` deletes both
namespaces (the veth pair and the rules go with them) and is safe to call more than once.

Needs root (CAP_NET_ADMIN), ``ip`` (iproute2) and ``iptables`` (scripts/ensure-netns-tools.sh);
:func:`unavailable` says why they cannot be used here, for a skip.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["NetnsPair", "unavailable"]

DROP_RULES = (("INPUT", "-j", "DROP"), ("OUTPUT", "-j", "DROP"))


def _run(argv: Sequence[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def unavailable() -> str | None:
    """Why network namespaces and iptables cannot be used here (None: they can): a missing tool,
    or ``ip netns add`` refused (no CAP_NET_ADMIN)."""
    missing = [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found (scripts/ensure-netns-tools.sh installs them, as root)"
    probe = f"tfp-{secrets.token_hex(3)}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        return f"cannot create a network namespace (ip netns add: {result.stderr.strip()}; needs CAP_NET_ADMIN)"
    try:
        rule = subprocess.run(
            ["ip", "netns", "exec", probe, "iptables", "-w", "-S"], capture_output=True, text=True, timeout=30
        )
        if rule.returncode != 0:
            return f"iptables does not work in a network namespace: {rule.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return None


class NetnsPair:
    """See the module docstring. ``create()`` builds it (deleting what it made if a step fails)."""

    def __init__(self) -> None:
        tag = secrets.token_hex(3)
        self.db_ns, self.worker_ns = f"tfd-{tag}", f"tfw-{tag}"
        self._veth_db, self._veth_worker = f"tfv{tag}d", f"tfv{tag}w"
        subnet = f"10.231.{int(tag[:2], 16)}"
        self.db_addr, self.worker_addr = f"{subnet}.1", f"{subnet}.2"
        self.subnet = f"{subnet}.0/30"
        self._created: list[str] = []
        self.partitioned = False

    def create(self) -> NetnsPair:
        try:
            for ns in (self.db_ns, self.worker_ns):
                _run(["ip", "netns", "add", ns])
                self._created.append(ns)
            _run(["ip", "link", "add", self._veth_db, "type", "veth", "peer", "name", self._veth_worker])
            # Each end goes straight into its namespace; if that fails, the pair is still in the
            # root namespace: delete it there (one end deletes both).
            try:
                _run(["ip", "link", "set", self._veth_db, "netns", self.db_ns])
                _run(["ip", "link", "set", self._veth_worker, "netns", self.worker_ns])
            except RuntimeError:
                with contextlib.suppress(RuntimeError):
                    _run(["ip", "link", "del", self._veth_db])
                raise
            for ns, veth, addr in (
                (self.db_ns, self._veth_db, self.db_addr),
                (self.worker_ns, self._veth_worker, self.worker_addr),
            ):
                _run(["ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", veth])
                _run(["ip", "-n", ns, "link", "set", veth, "up"])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        except BaseException:
            self.destroy()
            raise
        return self

    def exec_argv(self, ns: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace ``ns`` (``ip netns exec`` execs it: same pid)."""
        return ["ip", "netns", "exec", ns, *argv]

    def partition(self) -> None:
        """Drop every packet in and out of the worker's namespace (silently: no RST, no FIN)."""
        for rule in DROP_RULES:
            _run(self.exec_argv(self.worker_ns, ["iptables", "-w", "-A", *rule]))
        self.partitioned = True

    def heal(self) -> None:
        """Delete the DROP rules."""
        for rule in DROP_RULES:
            _run(self.exec_argv(self.worker_ns, ["iptables", "-w", "-D", *rule]))
        self.partitioned = False

    def rules(self) -> str:
        """``iptables -S`` of the worker's namespace."""
        return _run(self.exec_argv(self.worker_ns, ["iptables", "-w", "-S"])).stdout

    def destroy(self) -> None:
        """Delete both namespaces (their veth ends and iptables rules go with them)."""
        if self.partitioned:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.heal()
        while self._created:
            ns = self._created.pop()
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def exists(self) -> list[str]:
        """Which of the two namespaces exist now (for the cleanup check)."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
        names = {line.split()[0] for line in listed.splitlines() if line.strip()}
        return [ns for ns in (self.db_ns, self.worker_ns) if ns in names]
