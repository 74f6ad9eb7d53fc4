"""The ``pooler`` workload: many worker slots through a PgBouncer in transaction mode.

Each block, on a fresh database: E1 (no-op tasks) and E2 (sleep tasks) with ``processes``
worker processes of ``concurrency`` slots each, first on direct connections, then through a
PgBouncer of its own (:mod:`.pgbouncer`, ``pool_mode = transaction``, at most ``pool_size``
server connections to the database) with ``--pooler transaction`` and no listener (the workers
poll). Submissions and checks use a direct connection. Besides every trust check of E1/E2, a
pooled trial must hold two more: the server backends of the workers stayed within the pool
(sampled every 0.1 s from ``pg_stat_activity``, beside PgBouncer's own ``SHOW SERVERS``), and no
worker log names a prepared statement. The report gives pooled ÷ direct for each workload
(:func:`.sections.pooler_section`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..progress import Progress
from . import stats, workloads
from .pgbouncer import PgBouncer
from .results import CheckResult, TrialResult
from .workloads import WorkloadSpec

__all__ = ["WORKLOADS", "BackendSampler", "pooled_checks", "run_pair", "summary_rows"]

#: The workloads of the pair, direct then pooled: E1 (noop) and E2 (sleep).
WORKLOADS = ("pooler-e1", "pooler-e2")
#: Backends of the workers' own connections through the pooler (not the listener, not the exit).
WORKER_BACKENDS = """
SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE 'taskforge-worker/%%'
   AND application_name NOT IN ('taskforge-worker/listen', 'taskforge-worker/exit')
"""
#: What a worker log says when psycopg's prepared statements meet a transaction-mode pooler.
PREPARED_ERRORS = ("prepared statement", "DuplicatePreparedStatement", "InvalidSqlStatementName")


class BackendSampler:
    """Samples, every ``interval`` seconds (monotonic) on a thread and a direct connection of its
    own, the workers' server backends (:data:`WORKER_BACKENDS`) and, with ``bouncer``, the server
    connections PgBouncer holds to the database; keeps the largest of each. A context manager."""

    def __init__(self, dsn: str, bouncer: PgBouncer | None = None, interval: float = 0.1) -> None:
        self.dsn, self.bouncer, self.interval = dsn, bouncer, interval
        self.dbname = str(conninfo_to_dict(dsn).get("dbname") or "")
        self.max_backends = 0
        self.max_servers = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="backend-sampler", daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True, application_name="taskforge-bench/sampler") as conn:
            while not self._stop.is_set():
                row = conn.execute(WORKER_BACKENDS).fetchone()
                self.max_backends = max(self.max_backends, int(row[0]) if row else 0)
                if self.bouncer is not None:
                    self.max_servers = max(self.max_servers, self.bouncer.server_connections(self.dbname))
                self.samples += 1
                self._stop.wait(self.interval)

    def __enter__(self) -> BackendSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _prepared_errors(log_dir: Path) -> list[str]:
    """``name: line`` of every worker log line naming a prepared statement."""
    found = []
    for path in sorted(log_dir.glob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if any(text in line for text in PREPARED_ERRORS):
                found.append(f"{path.stem}: {line.strip()[:200]}")
    return found


def pooled_checks(sampler: BackendSampler, pool_size: int, log_dir: Path) -> list[CheckResult]:
    """The two checks of a pooled trial (module docstring)."""
    within = sampler.samples > 0 and max(sampler.max_backends, sampler.max_servers) <= pool_size
    errors = _prepared_errors(log_dir)
    return [
        CheckResult(
            "server_connections_within_pool",
            within,
            f"at most {sampler.max_backends} worker backends (pg_stat_activity) and {sampler.max_servers} "
            f"PgBouncer server connections in {sampler.samples} samples; pool {pool_size}",
        ),
        CheckResult(
            "no_prepared_statement_errors",
            not errors,
            "no worker log line names a prepared statement" if not errors else "; ".join(errors[:3]),
        ),
    ]


def run_pair(
    dsn: str,
    spec: WorkloadSpec,
    pool_size: int,
    block: int,
    log_dir: Path,
    progress: Progress,
) -> list[TrialResult]:
    """``spec`` on direct connections, then through a PgBouncer of ``pool_size`` server
    connections (workload name + ``-direct`` / ``-pooled``). Raises
    :class:`~.pgbouncer.PgBouncerUnavailable` before the pooled trial when PgBouncer cannot run."""
    direct = dataclasses.replace(spec, workload=f"{spec.workload}-direct")
    with BackendSampler(dsn) as sampler:
        first = workloads.run_trial(dsn, direct, block, log_dir, progress)
    first.metrics["server_backends_max"] = sampler.max_backends
    results = [first]
    dbname = str(conninfo_to_dict(dsn).get("dbname") or "")
    with PgBouncer(dsn, pool_size=pool_size) as bouncer:
        pooled = dataclasses.replace(
            spec, workload=f"{spec.workload}-pooled", worker_dsn=bouncer.dsn(dbname), pooler="transaction"
        )
        with BackendSampler(dsn, bouncer) as sampler:
            second = workloads.run_trial(dsn, pooled, block, log_dir, progress)
        label_dir = log_dir / second.label
        second.checks += pooled_checks(sampler, pool_size, label_dir)
        second.metrics["server_backends_max"] = max(sampler.max_backends, sampler.max_servers)
        second.metrics["pool_size"] = pool_size
        second.ok = second.error is None and not second.failed_checks()
    results.append(second)
    return results


def summary_rows(trials: Sequence[TrialResult]) -> list[dict[str, Any]]:
    """One row per workload of :data:`WORKLOADS` with passing trials: the median tasks/s
    direct and pooled, pooled ÷ direct (a ratio of medians), the largest number of server
    backends seen for each, and the shape (processes, slots, pool size)."""
    rows = []
    for workload in WORKLOADS:
        direct = [t for t in trials if t.workload == f"{workload}-direct" and t.ok]
        pooled = [t for t in trials if t.workload == f"{workload}-pooled" and t.ok]
        if not direct and not pooled:
            continue
        d = stats.median(t.throughput for t in direct)
        p = stats.median(t.throughput for t in pooled)
        sample = (pooled or direct)[0]
        rows.append(
            {
                "workload": workload,
                "processes": sample.workers,
                "concurrency": sample.concurrency,
                "tasks": sample.tasks,
                "pool_size": next((t.metrics.get("pool_size") for t in pooled), None),
                "direct": d,
                "pooled": p,
                "pooled_over_direct": stats.ratio(p, d),
                "direct_backends_max": max((t.metrics.get("server_backends_max", 0) for t in direct), default=None),
                "pooled_backends_max": max((t.metrics.get("server_backends_max", 0) for t in pooled), default=None),
                "trials": f"{len(direct)} / {len(pooled)}",
            }
        )
    return rows
