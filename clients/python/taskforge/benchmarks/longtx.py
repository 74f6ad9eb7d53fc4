"""Long transactions: what a snapshot held elsewhere does to claims (docs/operations.md).

One trial runs the worker's loop in this process for ``seconds`` (harness monotonic clock), one
cycle at a time: ``tf_submit`` one noop task, ``tf_claim`` it (timed), ``tf_finalize`` it
``succeeded``, each call its own transaction, exactly the SQL a worker with ``--concurrency 1``
and a producer send. The ``held`` trial first opens another session, starts a REPEATABLE READ
transaction and reads ``taskforge.tasks`` (taking its snapshot), and keeps it open until the
loop ends: vacuum and index-entry killing may then remove none of the row versions the loop
leaves behind, so every claim walks past the index entries of every task finished since the
snapshot was taken. Each trial gets a fresh database (the runner's block), so neither inherits
the other's dead rows.

Metrics: cycles per second; claim latency (client round trip, ms) p50, p95 and max, and the p50
of each second (how it grows while the snapshot is held); the snapshot's xmin age at the end
(transactions, from ``tf_snapshot_holders``). The trust checks are the usual ones: every task
SUCCEEDED in one attempt, nothing left running, ``tf_invariant_violations`` empty.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .. import sql
from ..progress import Progress
from . import statements, stats, trust
from .results import CheckResult, TrialResult
from .workloads import BENCH_QUEUE, database_checks, read_history

__all__ = ["WORKLOAD_FREE", "WORKLOAD_HELD", "ClaimLoop", "held_snapshot", "per_second_p50", "run_long_transaction"]

#: Workload names: the loop alone, and the loop while another session holds a snapshot.
WORKLOAD_FREE, WORKLOAD_HELD = "longtx", "longtx-held"
#: application_name of the session that holds the snapshot.
HOLDER_NAME = "taskforge-bench/snapshot-holder"
LEASE_SECONDS = 30.0


@contextlib.contextmanager
def held_snapshot(dsn: str) -> Iterator[psycopg.Connection]:
    """A session inside a REPEATABLE READ transaction that has taken its snapshot; rolled back
    and closed on exit."""
    conn = psycopg.connect(dsn, application_name=HOLDER_NAME)
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        conn.execute(statements.BENCH_LONGTX_TAKE_SNAPSHOT)
        yield conn
    finally:
        conn.rollback()
        conn.close()


class ClaimLoop:
    """The worker's cycle on one autocommit connection (also the soak's claim probe, :mod:`.soak`)."""

    def __init__(self, conn: psycopg.Connection, name: str = "bench-longtx"):
        self.conn = conn
        self.worker_id = sql.one_value(
            conn,
            sql.REGISTER_WORKER,
            {
                "name": name,
                "hostname": None,
                "pid": None,
                "queues": [BENCH_QUEUE],
                "task_types": ["noop"],
                "heartbeat_seconds": 5,
            },
        )
        self.task_ids: list[int] = []

    def claim(self) -> list[tuple[Any, ...]]:
        return self.conn.execute(
            statements.BENCH_CLAIM,
            {
                "worker_id": self.worker_id,
                "queues": [BENCH_QUEUE],
                "lease_seconds": LEASE_SECONDS,
                "max_tasks": 1,
                "task_types": None,
            },
        ).fetchall()

    def finalize(self, row: tuple[Any, ...]) -> None:
        self.conn.execute(
            sql.FINALIZE,
            {
                "task_id": row[0],
                "worker_id": self.worker_id,
                "attempt_number": row[1],
                "outcome": "succeeded",
                "result": None,
                "error": None,
            },
        )

    def cycle(self) -> float:
        """Submit, claim (timed), finalize; returns the claim's round trip in ms."""
        self.task_ids.append(
            sql.one_value(
                self.conn, statements.BENCH_SUBMIT, {"task_type": "noop", "payload": Jsonb({}), "queue": BENCH_QUEUE}
            )
        )
        started = time.perf_counter()
        rows = self.claim()
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        for row in rows:
            self.finalize(row)
        return elapsed_ms

    def drain(self) -> None:
        """Claim and finalize whatever is still QUEUED (a claim may have found nothing)."""
        while rows := self.claim():
            for row in rows:
                self.finalize(row)


def trust_line(exc: BaseException) -> str:
    """An error as one line for the report."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def per_second_p50(samples: list[tuple[float, float]], seconds: float) -> list[float | None]:
    """The median latency (ms) of each whole second of a run of ``seconds`` seconds, from
    ``(seconds since start, ms)`` samples; a sample at or past the end counts in the last second."""
    buckets: list[list[float]] = [[] for _ in range(max(1, int(seconds + 0.999)))]
    for at, ms in samples:
        buckets[min(int(at), len(buckets) - 1)].append(ms)
    return [stats.percentile(b, 50) for b in buckets]


def run_long_transaction(
    dsn: str, *, held: bool, seconds: float, block: int, log_dir: Path, progress: Progress
) -> TrialResult:
    """One trial (module docstring) against a migrated database. Never raises for a failed trial:
    the result carries ``error`` and the failed checks. ``log_dir`` is unused (no processes)."""
    del log_dir
    result = TrialResult(
        workload=WORKLOAD_HELD if held else WORKLOAD_FREE,
        block=block,
        workers=1,
        concurrency=1,
        tasks=0,
        options={"seconds": seconds, "snapshot_held": held},
    )
    total = max(1, round(seconds))
    progress.start(f"{result.label} ({'a snapshot held' if held else 'no snapshot held'}, {seconds:g} s)", total)
    samples: list[tuple[float, float]] = []
    elapsed = 0.0
    with psycopg.connect(dsn, autocommit=True) as conn:
        loop = ClaimLoop(conn)
        try:
            with contextlib.ExitStack() as stack:
                if held:
                    stack.enter_context(held_snapshot(dsn))
                started = time.monotonic()
                while (elapsed := time.monotonic() - started) < seconds:
                    samples.append((elapsed, loop.cycle()))
                    progress.update(min(total, int(elapsed)), f"{len(samples)} cycles")
                if held:
                    result.metrics["xmin_age_at_end"] = sql.one_value(
                        conn, statements.BENCH_LONGTX_HOLDER_AGE, {"name": HOLDER_NAME}
                    )
            loop.drain()
        except psycopg.Error as exc:
            result.error = trust_line(exc)
        result.tasks = len(loop.task_ids)
        tasks, attempts = read_history(conn, loop.task_ids)
        result.checks = trust.check_history(loop.task_ids, tasks, attempts, "once") + database_checks(conn)
    claims = [ms for _, ms in samples]
    result.span_seconds = elapsed
    result.throughput = len(samples) / elapsed if elapsed > 0 else None
    result.metrics.update(
        {
            "cycles": len(samples),
            "claim_p50_ms": stats.percentile(claims, 50),
            "claim_p95_ms": stats.percentile(claims, 95),
            "claim_max_ms": max(claims) if claims else None,
            "claim_p50_ms_by_second": per_second_p50(samples, seconds),
        }
    )
    if not samples:
        result.checks.append(CheckResult("cycles", False, "no cycle completed"))
    result.ok = result.error is None and not result.failed_checks()
    p50 = result.metrics["claim_p50_ms"]
    progress.finish(
        f"{result.throughput or 0:,.0f} cycles/s, claim p50 {p50 or 0:.2f} ms"
        if result.ok
        else f"FAILED: {result.error or '; '.join(c.name for c in result.failed_checks())}"
    )
    return result
