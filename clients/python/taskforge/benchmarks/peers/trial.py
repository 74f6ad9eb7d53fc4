"""One peer trial, the same skeleton for every peer (the E1 protocol of docs/benchmarks.md):

1. apply the peer's schema to a fresh, empty database;
2. start the mode's worker processes and wait until every one is up;
3. enqueue the warm-up jobs in one transaction and wait until they are finished (excluded from
   every figure);
4. enqueue the measured jobs in one transaction and poll, every ``peer.poll_seconds``, until
   none is left unfinished (each poll reads the database clock, which times the end for a peer
   that keeps no finish timestamp);
5. read every process's peak RSS, stop them with SIGTERM, take the window and the trust checks
   from the peer (:meth:`~.base.Peer.outcome`).

Throughput = measured jobs / (window end - window start), database clock. A trial never raises
for a failure: the result carries ``error`` or failed checks and ``ok`` is False.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import psycopg

from ...processes import ProcessHarness
from ...progress import Progress
from .. import cpu, memory, stats, writes
from ..results import CheckResult, TrialResult
from .base import Batch, Drain, Installed, Mode, Peer, PeerError

__all__ = ["run_peer_trial", "wait_drained"]

#: How long the worker processes may take to come up (seconds, harness clock).
START_TIMEOUT_SECONDS = 60.0


def _check_alive(harness: ProcessHarness) -> None:
    dead = harness.exited_unexpectedly()
    if dead:
        raise PeerError(f"{dead[0].name} exited with {dead[0].returncode}:\n{dead[0].tail()}")


def _wait_ready(peer: Peer, conn: psycopg.Connection[Any], harness: ProcessHarness, processes: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while peer.ready(conn, harness) < processes:
        _check_alive(harness)
        if time.monotonic() > deadline:
            raise PeerError(
                f"{peer.name} workers did not start within {START_TIMEOUT_SECONDS:g} s; logs in {harness.log_dir}"
            )
        time.sleep(0.05)


def wait_drained(
    peer: Peer,
    conn: psycopg.Connection[Any],
    harness: ProcessHarness,
    batch: Batch,
    timeout: float,
    progress: Progress | None = None,
) -> Drain:
    """Poll ``peer.remaining`` every ``peer.poll_seconds`` until no job of ``batch`` is left; the
    database clock of the last busy and of the first empty poll. Raises PeerError when a worker
    dies or ``timeout`` seconds (harness clock) pass."""
    deadline = time.monotonic() + timeout
    last_busy: dt.datetime | None = None
    polls = 0
    while True:
        left, at = peer.remaining(conn, batch)
        polls += 1
        if progress is not None:
            progress.update(len(batch.ids) - left)
        if left == 0:
            return Drain(last_busy_at=last_busy, drained_at=at, polls=polls, interval_seconds=peer.poll_seconds)
        last_busy = at
        _check_alive(harness)
        if time.monotonic() > deadline:
            raise PeerError(f"timed out after {timeout:g} s: {left} of {len(batch.ids)} jobs left")
        time.sleep(peer.poll_seconds)


def _exit_check(exit_codes: dict[str, int | None]) -> CheckResult:
    bad = [f"{name} exited {code}" for name, code in exit_codes.items() if code != 0]
    return CheckResult(
        "clean_exits", not bad, "; ".join(bad) or f"{len(exit_codes)} processes stopped by SIGTERM with code 0"
    )


def run_peer_trial(
    peer: Peer,
    installed: Installed,
    dsn: str,
    mode: Mode,
    jobs: int,
    warmup: int,
    block: int,
    log_dir: Path,
    progress: Progress,
    timeout_seconds: float = 600.0,
) -> TrialResult:
    """One trial of ``peer`` in ``mode`` on the fresh, empty database at ``dsn`` (module
    docstring); ``jobs`` measured, ``warmup`` before them."""
    result = TrialResult(
        workload=peer.workload(mode),
        block=block,
        workers=mode.processes,
        concurrency=mode.concurrency,
        tasks=jobs,
        options={
            "peer": peer.name,
            "mode": mode.kind,
            "settings": dict(mode.settings),
            "source": mode.source,
            "versions": installed.versions,
            "runtime": {k: v for k, v in installed.runtime.items() if k != "executable"},
            "warmup": warmup,
        },
    )
    progress.start(f"{result.label} ({peer.name} noop x{jobs})", jobs)
    harness = ProcessHarness(dsn, log_dir / result.label, env=peer.process_env(installed, dsn))
    try:
        peer.prepare(installed, dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                for i in range(mode.processes):
                    harness.start(peer.worker_argv(installed, mode), kind="peer", name=f"peer-{i + 1}")
                _wait_ready(peer, conn, harness, mode.processes)
                if warmup:
                    wait_drained(peer, conn, harness, peer.enqueue(installed, dsn, warmup), timeout_seconds)
                before = writes.snapshot(conn)
                cpu_before = cpu.snapshot(conn, harness)
                batch = peer.enqueue(installed, dsn, jobs)
                drain = wait_drained(peer, conn, harness, batch, timeout_seconds, progress)
                result.metrics["cpu_per_task"] = cpu.per_task(cpu_before, cpu.snapshot(conn, harness), jobs)
            finally:
                result.peak_rss_kib = memory.peak_rss_kib(harness)
                result.exit_codes = harness.stop_all()
            outcome = peer.outcome(conn, batch, drain)
            result.metrics["writes_per_task"] = writes.per_task(conn, before, writes.snapshot(conn), jobs)
    except (PeerError, psycopg.Error) as exc:
        result.error = str(exc)
        progress.finish(f"FAILED: {result.error.splitlines()[0]}")
        return result
    result.checks = [*outcome.checks, _exit_check(result.exit_codes)]
    result.metrics.update(outcome.metrics)
    result.metrics["polls"] = drain.polls
    if outcome.first is not None and outcome.last is not None and outcome.last > outcome.first:
        result.span_seconds = stats.span_seconds(outcome.first, outcome.last)
        result.throughput = stats.throughput(jobs, outcome.first, outcome.last)
    result.ok = not result.failed_checks() and result.throughput is not None
    if result.ok:
        progress.finish(f"{result.throughput:,.1f} jobs/s; trust checks passed")
    else:
        failed = "; ".join(f"{c.name}: {c.detail}" for c in result.failed_checks()) or "no window"
        progress.finish(f"TRUST CHECK FAILED: {failed}")
    return result
