"""CPU time a trial's measured tasks cost: the worker processes and their database backends.

On this 2-core machine the worker processes and PostgreSQL share the cores, so past one process
the throughput is set by the CPU each task costs in both. A trial takes a :func:`snapshot` just
before the measured tasks are submitted and another once they are all drained (before the
processes are stopped), and :func:`per_task` divides the difference by the task count:

* ``worker_us``: user + system time of every process in each worker's process group (the
  harness starts each in a group of its own: a Python worker, or a peer's Node/Python process),
  all threads included;
* ``backend_us``: user + system time of the database backends connected to the trial's
  database, except the harness's own monitoring session.

A process or backend that starts inside the window counts whole (a pool that opens connections
as the work arrives pays for them in the window); one that exits inside it is missed (the figure
errs low): the submitting session, which opens and closes inside the window, is not counted, and
the workers of every system measured keep their connections until they are stopped.

Linux only (``/proc/<pid>/stat``, fields ``utime`` and ``stime``, in clock ticks of
``SC_CLK_TCK``, usually 10 ms: a figure over a few thousand tasks is good to a few percent).
Elsewhere :func:`snapshot` returns None and the trial records no CPU figure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from ..processes import ProcessHarness

__all__ = ["CpuSnapshot", "per_task", "snapshot"]

PROC = Path("/proc")

BACKENDS = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


@dataclass(frozen=True)
class CpuSnapshot:
    """Cumulative CPU seconds by pid, of the worker process groups and of the backends."""

    workers: dict[int, float]
    backends: dict[int, float]


def _stat(pid_dir: Path) -> tuple[int, float] | None:
    """(process group, user + system seconds) of one /proc/<pid> entry; None once it is gone."""
    try:
        text = (pid_dir / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp, ...
    return int(fields[2]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snapshot(conn: psycopg.Connection[Any], harness: ProcessHarness, proc: Path = PROC) -> CpuSnapshot | None:
    """CPU so far of the harness's live process groups and of the database's backends (None where
    /proc cannot be read)."""
    if not (proc / "self" / "stat").exists():
        return None
    groups = {p.pid for p in harness.processes if p.alive()}
    workers: dict[int, float] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(entry)
        if stat is not None and stat[0] in groups:
            workers[int(entry.name)] = stat[1]
    backends: dict[int, float] = {}
    for (pid,) in conn.execute(BACKENDS).fetchall():
        stat = _stat(proc / str(pid))
        if stat is not None:
            backends[int(pid)] = stat[1]
    return CpuSnapshot(workers, backends)


def _delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def per_task(before: CpuSnapshot | None, after: CpuSnapshot | None, tasks: int) -> dict[str, float] | None:
    """Microseconds of CPU per task between two snapshots: ``worker_us``, ``backend_us`` and
    their sum ``total_us`` (None when either snapshot is missing or ``tasks`` is 0)."""
    if before is None or after is None or tasks <= 0:
        return None
    worker = 1e6 * _delta(before.workers, after.workers) / tasks
    backend = 1e6 * _delta(before.backends, after.backends) / tasks
    return {"worker_us": worker, "backend_us": backend, "total_us": worker + backend}
