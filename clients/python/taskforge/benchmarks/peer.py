"""The peer: the same no-op jobs drained by procrastinate (PyPI), the nearest Python peer.

procrastinate is installed by the harness into its own virtualenv, ``<out>/peer-venv`` (reused
when present), never into TaskForge's environment. Its app is ``bench/peer/peer_app.py`` (one
no-op task). Per trial, on a fresh database with procrastinate's schema applied: start N
``procrastinate worker --concurrency 1`` processes, wait until ``procrastinate_workers`` lists
them, defer the warm-up jobs in one transaction and wait for them, defer the measured jobs in
one transaction, wait until all are done, stop the workers with SIGTERM.

Timing comes from procrastinate's own ``procrastinate_events`` rows: jobs / (last 'succeeded'
- first 'started') over the measured jobs. Those timestamps are the database's ``now()`` of the
transaction that wrote the event (procrastinate 3.x), i.e. database time, like TaskForge's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg

from .. import sql
from ..processes import ProcessHarness
from ..progress import Progress
from . import stats
from .database import bench_dir
from .results import CheckResult, TrialResult

__all__ = ["PEER_REQUIREMENT", "PeerError", "ensure_venv", "run_peer_trial"]

#: What the harness installs into the peer's virtualenv.
PEER_REQUIREMENT = "procrastinate>=3.0,<4"
PEER_QUEUE = "bench"
POLL_SECONDS = 0.1
DEFER_CODE = "import sys, peer_app; peer_app.main(sys.argv[1:])"


class PeerError(RuntimeError):
    """The peer could not be installed or set up."""


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path, progress: Progress) -> str:
    """Create ``venv`` with procrastinate unless it already has it; return procrastinate's version."""
    python = _venv_python(venv)
    if not python.exists():
        progress.note(f"peer: creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    probe = [str(python), "-c", "import importlib.metadata as m; print(m.version('procrastinate'))"]
    found = subprocess.run(probe, capture_output=True, text=True)
    if found.returncode != 0:
        progress.note(f"peer: installing {PEER_REQUIREMENT} into {venv} (pip)")
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", PEER_REQUIREMENT], capture_output=True, text=True
        )
        if pip.returncode != 0:
            raise PeerError(f"pip install {PEER_REQUIREMENT} failed:\n{pip.stdout}{pip.stderr}"[-3000:])
        found = subprocess.run(probe, capture_output=True, text=True, check=True)
    return found.stdout.strip()


def _peer_env(dsn: str) -> dict[str, str]:
    return {"TASKFORGE_BENCH_PEER_DSN": dsn, "PYTHONPATH": str(bench_dir() / "peer")}


def _procrastinate(venv: Path, *args: str) -> list[str]:
    return [str(_venv_python(venv)), "-m", "procrastinate", "--app=peer_app.app", *args]


def apply_schema(venv: Path, dsn: str) -> None:
    """Apply procrastinate's schema to the (empty) database at ``dsn``."""
    done = subprocess.run(
        _procrastinate(venv, "schema", "--apply"), env=_subprocess_env(dsn), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise PeerError(f"procrastinate schema --apply failed:\n{done.stdout}{done.stderr}"[-3000:])


def _subprocess_env(dsn: str) -> dict[str, str]:
    return dict(os.environ, **_peer_env(dsn))


def defer(venv: Path, dsn: str, count: int) -> list[int]:
    """Defer ``count`` no-op jobs in one transaction (procrastinate's batch_defer); their ids."""
    done = subprocess.run(
        [str(_venv_python(venv)), "-c", DEFER_CODE, "defer", str(count), PEER_QUEUE],
        env=_subprocess_env(dsn),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise PeerError(f"deferring peer jobs failed:\n{done.stderr}"[-3000:])
    job_ids: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    return job_ids


def _wait(
    conn: psycopg.Connection, harness: ProcessHarness, job_ids: Sequence[int], timeout: float, progress: Progress | None
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        done = sql.one_value(conn, sql.BENCH_PEER_DONE, {"job_ids": list(job_ids)})
        if progress is not None:
            progress.update(done)
        if done == len(job_ids):
            return
        dead = harness.exited_unexpectedly()
        if dead:
            raise PeerError(f"{dead[0].name} exited with {dead[0].returncode}:\n{dead[0].tail()}")
        if time.monotonic() > deadline:
            raise PeerError(f"timed out after {timeout:g} s: {done}/{len(job_ids)} jobs done")
        time.sleep(POLL_SECONDS)


def run_peer_trial(
    venv: Path,
    dsn: str,
    workers: int,
    jobs: int,
    warmup: int,
    block: int,
    log_dir: Path,
    progress: Progress,
    timeout_seconds: float = 600.0,
) -> TrialResult:
    """One peer trial on a fresh, empty database at ``dsn`` (module docstring)."""
    result = TrialResult(
        workload="peer",
        block=block,
        workers=workers,
        concurrency=1,
        tasks=jobs,
        options={"requirement": PEER_REQUIREMENT, "warmup": warmup},
    )
    progress.start(f"{result.label} (procrastinate noop x{jobs})", jobs)
    harness = ProcessHarness(dsn, log_dir / result.label, env=_peer_env(dsn))
    job_ids: list[int] = []
    try:
        apply_schema(venv, dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                for i in range(workers):
                    harness.start(
                        _procrastinate(venv, "worker", "--queues", PEER_QUEUE, "--concurrency", "1"),
                        kind="peer",
                        name=f"peer-worker-{i + 1}",
                    )
                deadline = time.monotonic() + 60
                while sql.one_value(conn, sql.BENCH_PEER_WORKERS) < workers:
                    if harness.exited_unexpectedly() or time.monotonic() > deadline:
                        raise PeerError(f"peer workers did not start; logs in {harness.log_dir}")
                    time.sleep(POLL_SECONDS)
                if warmup:
                    _wait(conn, harness, defer(venv, dsn, warmup), timeout_seconds, None)
                job_ids = defer(venv, dsn, jobs)
                _wait(conn, harness, job_ids, timeout_seconds, progress)
            finally:
                result.exit_codes = harness.stop_all()
            statuses: dict[str, int] = dict(conn.execute(sql.BENCH_PEER_STATUS, {"job_ids": job_ids}).fetchall())
            first, last, started, succeeded = sql.one_row(conn, sql.BENCH_PEER_SPAN, {"job_ids": job_ids})
    except PeerError as exc:
        result.error = str(exc)
        progress.finish(f"FAILED: {result.error.splitlines()[0]}")
        return result
    result.checks = [
        CheckResult(
            "counts",
            statuses.get("succeeded", 0) == jobs == len(job_ids),
            f"deferred {len(job_ids)}, succeeded {statuses.get('succeeded', 0)}, statuses {statuses}",
        ),
        CheckResult(
            "events",
            started == succeeded == jobs,
            f"{started} 'started' and {succeeded} 'succeeded' events for {jobs} jobs",
        ),
    ]
    if first is not None and last is not None and last > first:
        result.span_seconds = stats.span_seconds(first, last)
        result.throughput = stats.throughput(jobs, first, last)
    result.metrics["procrastinate_statuses"] = statuses
    result.ok = not result.failed_checks() and result.throughput is not None
    progress.finish(
        f"{result.throughput:,.1f} jobs/s"
        if result.ok
        else "TRUST CHECK FAILED: " + "; ".join(c.detail for c in result.failed_checks())
    )
    return result
