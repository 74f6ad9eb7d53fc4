"""The chaos rig with a network between one worker and the database (tests/chaos/test_partition.py;
docs/chaos.md, "Network partition").

:class:`PartitionRig` is a :class:`~chaos_rig.ChaosRig` whose private server runs in the
database's network namespace of a :class:`~netns.NetnsPair` (listening on its veth address
``10.231.N.1``, pg_hba trusting the pair's /30) and whose worker slot PARTITIONED_SLOT runs in
the worker's namespace (``ip netns exec``), connected over TCP through the veth pair. The rig
itself, the other workers and the schedulers stay in the root namespace and use the server's
Unix socket (a path, reachable from every network namespace): a partition of the veth pair
cuts off that one worker and nothing else, so the schedulers recover its expired leases and
the other workers run its tasks meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskforge.private_server import PrivateServer
from taskforge.processes import ManagedProcess, taskforge_command

from chaos_rig import DATABASE, ChaosRig
from netns import NetnsPair

__all__ = ["PARTITIONED_SLOT", "PartitionRig"]

#: The worker slot in the worker's network namespace.
PARTITIONED_SLOT = 0

OWN_ATTEMPTS = """
SELECT a.task_id, a.attempt_number, a.state, a.outcome
  FROM taskforge.attempts a JOIN taskforge.workers w USING (worker_id)
 WHERE w.name = %(name)s AND a.state = 'RUNNING'
"""
#: The partitioned worker's first claim and first finalize of its own after an instant
#: (epoch seconds): attempts it started, attempts it ended (outcomes a worker reports).
RESUMED = """
SELECT extract(epoch FROM min(a.started_at) FILTER (WHERE a.started_at >= to_timestamp(%(after)s)))::float8,
       extract(epoch FROM min(a.finished_at) FILTER (
           WHERE a.finished_at >= to_timestamp(%(after)s)
             AND a.outcome IN ('succeeded', 'failed', 'retryable', 'cancelled')))::float8
  FROM taskforge.attempts a JOIN taskforge.workers w USING (worker_id)
 WHERE w.name = %(name)s
"""


class PartitionRig(ChaosRig):
    """See the module docstring. ``net`` must be created already; :meth:`close` destroys it."""

    def __init__(self, workdir: Path, net: NetnsPair, seed: int = 20240617) -> None:
        self.net = net
        self.partition_figures: dict[str, Any] = {}
        super().__init__(workdir, seed)

    def _make_server(self) -> PrivateServer:
        return PrivateServer(
            settings={"listen_addresses": self.net.db_addr},
            netns=self.net.db_ns,
            hba=(f"host all all {self.net.subnet} trust",),
        )

    @property
    def worker_dsn(self) -> str:
        """The partitioned worker's DSN: the server's veth address, over TCP."""
        return self.server.tcp_dsn(DATABASE, self.net.db_addr)

    def _start_worker(self, slot: int) -> ManagedProcess:
        if slot != PARTITIONED_SLOT:
            return super()._start_worker(slot)
        name = f"chaos-netns-w{slot}-{self.harness.count('worker') + 1}"
        argv = taskforge_command("worker", ["--name", name, "--log-level", "INFO", *self.worker_args(slot)])
        return self.harness.start(
            self.net.exec_argv(self.net.worker_ns, argv),
            kind="worker",
            name=name,
            env={"TASKFORGE_DSN": self.worker_dsn},
        )

    @property
    def partitioned(self) -> ManagedProcess:
        return self.slots[PARTITIONED_SLOT]

    def running_attempts(self, proc: ManagedProcess) -> list[tuple[int, int]]:
        """(task_id, attempt_number) of every RUNNING attempt of the worker ``proc``."""
        return [(task_id, number) for task_id, number, _, _ in self.sql(OWN_ATTEMPTS, {"name": proc.name})]

    def resumed(self, proc: ManagedProcess, after: float) -> tuple[float | None, float | None]:
        """Epoch seconds of the worker's first claim and first finalize at or after ``after``."""
        claimed, finalized = self.sql(RESUMED, {"name": proc.name, "after": after})[0]
        return claimed, finalized

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        summary["command"] = "make chaos PYTEST_ARGS='-k partition'"
        summary["topology"] = {
            "database_namespace": f"{self.net.db_ns} ({self.net.db_addr}/30; the rest of the rig on its Unix socket)",
            "worker_namespace": f"{self.net.worker_ns} ({self.net.worker_addr}/30; worker slot {PARTITIONED_SLOT})",
            "fault": "iptables -A INPUT/OUTPUT -j DROP inside the worker's namespace",
        }
        summary["partition"] = self.partition_figures
        return summary

    def close(self) -> dict[str, int | None]:
        try:
            return super().close()
        finally:
            self.net.destroy()
