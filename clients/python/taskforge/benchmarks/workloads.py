"""The reference workloads with real ``taskforge worker`` and ``taskforge scheduler`` processes.

Trial protocol (:func:`run_trial`), against a migrated database:

1. start the schedulers and one ``taskforge worker`` process per worker (``--queue bench``,
   ``--log-level WARNING``), and wait until ``taskforge.tf_workers`` shows every worker alive;
2. submit the warm-up tasks (``noop``) in one transaction and wait until they are terminal;
3. submit the measured tasks in one transaction (so they become visible, and the NOTIFY is
   delivered, at commit; ``tf_submit``, or the ``flow`` variants' ``tf_submit_many`` calls,
   :mod:`.flow`) and wait until every one is terminal; a timeout fails the trial;
   E6 kills owners of RUNNING tasks with SIGKILL meanwhile;
4. read every process's peak RSS (:mod:`.memory`), stop the processes with SIGTERM, read the
   history and run the trust checks.

Throughput = measured tasks / (latest attempt finish - earliest attempt start) over the measured
tasks' attempts, database timestamps. Each trial also records the peak resident memory of every
process (``peak_rss_kib``, Linux ``VmHWM``, read just before the stop; :mod:`.memory`).
:func:`run_pickup` measures the NOTIFY path instead: tasks submitted one at a time to one idle
worker, latency = first attempt start - task creation.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .. import sql
from ..processes import ManagedProcess, ProcessHarness
from ..progress import Progress
from . import cpu, flow, memory, statements, stats, trust, writes
from .flow import FlowShape
from .results import CheckResult, TrialResult

__all__ = [
    "BENCH_QUEUE",
    "TrialFailed",
    "WorkloadSpec",
    "register_fixed_backoff",
    "run_pickup",
    "run_trial",
    "submit_batch",
    "submit_measured",
    "submit_requests",
    "wait_terminal",
    "wait_workers_live",
]

BENCH_QUEUE = "bench"
#: Every bench worker runs the synthetic task types (noop, sleep, fail_once), which are opt-in.
SYNTHETIC = ("--import", "taskforge.synthetic")
#: Seconds between polls of the database while waiting (harness monotonic clock).
POLL_SECONDS = 0.1


class TrialFailed(Exception):
    """The trial could not be measured (a process died, a wait timed out)."""


@dataclass(frozen=True)
class WorkloadSpec:
    """One trial's shape. Durations in seconds; ``payload`` is the measured tasks' payload.

    ``prefetch``: each worker's ``--prefetch`` (attempts claimed ahead of a free slot).
    ``kills``: SIGKILL this many workers that own RUNNING measured tasks once
    ``kill_after_fraction`` of the measured tasks are terminal (E6). ``expectation``: see
    :mod:`.trust`. ``flow``: the measured tasks' dependency or flow-control shape (the ``flow``
    workload, :mod:`.flow`); None submits them through ``tf_submit`` as E1 does.
    ``worker_dsn``: where the workers connect instead of the trial's database DSN (a PgBouncer:
    the ``pooler`` workload, :mod:`.pooler`), with ``--pooler`` = ``pooler``; submissions and
    checks stay on the direct DSN.
    """

    workload: str
    task_type: str
    tasks: int
    workers: int
    payload: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 1
    prefetch: int = 0
    schedulers: int = 0
    lease_seconds: float = 30.0
    scheduler_interval_seconds: float = 1.0
    kills: int = 0
    kill_after_fraction: float = 0.1
    expectation: str = "once"
    warmup: int = 100
    timeout_seconds: float = 600.0
    start_timeout_seconds: float = 60.0
    stop_timeout_seconds: float = 30.0
    flow: FlowShape | None = None
    worker_dsn: str | None = None
    pooler: str = "none"


def register_fixed_backoff(dsn: str, task_type: str, seconds: float) -> None:
    """Give ``task_type`` a fixed retry delay of ``seconds`` (base = cap, no jitter)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statements.BENCH_REGISTER_FIXED_BACKOFF, {"task_type": task_type, "seconds": seconds})


def _submit_in_one_transaction(
    dsn: str,
    statement: str,
    params: Sequence[dict[str, Any]],
    setup: Sequence[tuple[str, dict[str, Any]]] = (),
) -> list[int]:
    """In ONE transaction: the ``setup`` statements, then ``statement`` once per element of
    ``params`` (a pipelined executemany). Returns the first column (a task id) of every row
    the statement returned, in order; everything becomes visible, and the NOTIFY goes out, at
    commit."""
    ids: list[int] = []
    with psycopg.connect(dsn, autocommit=False) as conn:
        for text, args in setup:
            conn.execute(text, args)
        with conn.cursor() as cur:
            cur.executemany(statement, params, returning=True)
            while True:
                ids.extend(row[0] for row in cur.fetchall())
                if not cur.nextset():
                    break
        conn.commit()
    return ids


def submit_batch(dsn: str, task_type: str, payload: dict[str, Any], count: int, queue: str = BENCH_QUEUE) -> list[int]:
    """Submit ``count`` tasks through ``tf_submit`` in ONE transaction (a pipelined executemany);
    they become visible, and the NOTIFY goes out, at commit. Returns their task ids."""
    params = [{"task_type": task_type, "payload": Jsonb(payload), "queue": queue}] * count
    return _submit_in_one_transaction(dsn, statements.BENCH_SUBMIT, params)


def submit_requests(
    dsn: str,
    calls: Sequence[Sequence[dict[str, Any]]],
    setup: Sequence[tuple[str, dict[str, Any]]] = (),
) -> list[int]:
    """Submit every call (a list of ``tf_submit_many`` request objects) in ONE transaction after
    the ``setup`` statements (e.g. a rate limit, :func:`.flow.setup`); returns the task ids in
    request order."""
    params = [{"requests": Jsonb(list(call))} for call in calls]
    return _submit_in_one_transaction(dsn, sql.SUBMIT_MANY, params, setup)


def submit_measured(dsn: str, spec: WorkloadSpec) -> list[int]:
    """The measured tasks of ``spec`` in one transaction: through ``tf_submit`` (E1's path), or,
    with ``spec.flow``, as that shape's ``tf_submit_many`` calls after its setup."""
    if spec.flow is None:
        return submit_batch(dsn, spec.task_type, spec.payload, spec.tasks)
    shape = spec.flow
    return submit_requests(
        dsn, flow.calls(shape, spec.task_type, spec.payload, spec.tasks, BENCH_QUEUE), flow.setup(shape)
    )


def _check_processes(harness: ProcessHarness) -> None:
    dead = harness.exited_unexpectedly()
    if dead:
        p = dead[0]
        raise TrialFailed(
            f"{p.name} (pid {p.pid}) exited with code {p.returncode}; last lines of {p.log_path}:\n{p.tail()}"
        )


def wait_workers_live(conn: psycopg.Connection, harness: ProcessHarness, timeout: float) -> None:
    """Poll until every worker process of ``harness`` is alive in ``tf_workers``, at most
    ``timeout`` seconds (monotonic clock). Raises :class:`TrialFailed` when one has exited or the
    time is up."""
    pids = [p.pid for p in harness.processes if p.kind == "worker"]
    deadline = time.monotonic() + timeout
    while True:
        _check_processes(harness)
        live = {row[0] for row in conn.execute(statements.BENCH_LIVE_WORKER_PIDS, {"pids": pids})}
        if live >= set(pids):
            return
        if time.monotonic() > deadline:
            raise TrialFailed(
                f"{len(set(pids) - live)} of {len(pids)} workers not alive in tf_workers "
                f"after {timeout:g} s (logs in {harness.log_dir})"
            )
        time.sleep(POLL_SECONDS)


def wait_terminal(
    conn: psycopg.Connection,
    harness: ProcessHarness,
    task_ids: Sequence[int],
    timeout: float,
    progress: Progress | None = None,
    tick: Callable[[int], str] | None = None,
) -> None:
    """Poll until every task of ``task_ids`` is terminal, at most ``timeout`` seconds (monotonic
    clock); ``tick(done)`` runs on every poll and returns a status for ``progress``. Raises
    :class:`TrialFailed` when a process of ``harness`` has exited or the time is up."""
    deadline = time.monotonic() + timeout
    ids = list(task_ids)
    while True:
        done = sql.one_value(conn, statements.BENCH_TERMINAL_COUNT, {"task_ids": ids})
        status = tick(done) if tick is not None else ""
        if progress is not None:
            progress.update(done, status)
        if done == len(ids):
            return
        _check_processes(harness)
        if time.monotonic() > deadline:
            raise TrialFailed(f"timed out after {timeout:g} s: {done}/{len(ids)} tasks terminal")
        time.sleep(POLL_SECONDS)


def read_history(
    conn: psycopg.Connection, task_ids: Sequence[int]
) -> tuple[list[trust.TaskRow], list[trust.AttemptRow]]:
    """The measured tasks and all their attempts (tables, not views: no de-duplication)."""
    ids = list(task_ids)
    tasks = [trust.TaskRow(*row) for row in conn.execute(statements.BENCH_TASKS, {"task_ids": ids})]
    attempts = [trust.AttemptRow(*row) for row in conn.execute(statements.BENCH_ATTEMPTS, {"task_ids": ids})]
    return tasks, attempts


def database_checks(conn: psycopg.Connection) -> list[CheckResult]:
    """Whole-database checks after a drain: no leftovers, tf_invariant_violations empty."""
    running, leased, running_attempts = sql.one_row(conn, statements.BENCH_LEFTOVERS)
    return [
        trust.check_drained(running, leased, running_attempts),
        trust.check_invariants(conn.execute(sql.INVARIANT_VIOLATIONS).fetchall()),
    ]


def _exit_checks(exit_codes: dict[str, int | None], killed: set[str]) -> CheckResult:
    bad = [f"{name} exited {code}" for name, code in exit_codes.items() if name not in killed and code != 0]
    return CheckResult(
        "clean_exits",
        not bad,
        "; ".join(bad) if bad else f"{len(exit_codes) - len(killed)} processes stopped by SIGTERM with code 0",
    )


class _Killer:
    """E6: SIGKILLs ``spec.kills`` workers that own RUNNING measured tasks, once, when enough
    of the measured tasks are terminal; records the database time of the kill."""

    def __init__(self, spec: WorkloadSpec, conn: psycopg.Connection, harness: ProcessHarness, task_ids: list[int]):
        self.spec, self.conn, self.harness, self.task_ids = spec, conn, harness, task_ids
        self.killed: list[ManagedProcess] = []
        self.killed_at: dt.datetime | None = None

    def __call__(self, done: int) -> str:
        if not self.spec.kills:
            return ""
        if self.killed_at is None and done >= self.spec.kill_after_fraction * len(self.task_ids):
            owners = {
                row[0] for row in self.conn.execute(statements.BENCH_RUNNING_OWNER_PIDS, {"task_ids": self.task_ids})
            }
            victims = [p for p in self.harness.alive("worker") if p.pid in owners][: self.spec.kills]
            if len(victims) == self.spec.kills:
                for proc in victims:
                    proc.kill()
                self.killed = victims
                self.killed_at = sql.one_value(self.conn, statements.BENCH_DB_NOW)
        return f"(killed {len(self.killed)})" if self.killed else ""


def _span_metrics(result: TrialResult, attempts: Sequence[trust.AttemptRow]) -> None:
    starts = [a.started_at for a in attempts if a.started_at is not None]
    finishes = [a.finished_at for a in attempts if a.finished_at is not None]
    if starts and finishes:
        result.span_seconds = stats.span_seconds(min(starts), max(finishes))
        if result.span_seconds > 0:
            result.throughput = stats.throughput(result.tasks, min(starts), max(finishes))


def _recovery_metrics(result: TrialResult, attempts: Sequence[trust.AttemptRow], killer: _Killer) -> None:
    lags = sorted(
        (a.finished_at - a.lease_expires_at).total_seconds() * 1000.0
        for a in attempts
        if a.state == "ABANDONED" and a.finished_at is not None and a.lease_expires_at is not None
    )
    finishes = [a.finished_at for a in attempts if a.finished_at is not None]
    result.metrics.update(
        {
            "killed": [p.name for p in killer.killed],
            "abandoned_attempts": len(lags),
            "recovery_lag_ms": lags,
            "recovery_lag_p50_ms": stats.percentile(lags, 50),
            "recovery_lag_p95_ms": stats.percentile(lags, 95),
            "recovery_lag_max_ms": max(lags) if lags else None,
            "kill_to_drain_seconds": (max(finishes) - killer.killed_at).total_seconds()
            if killer.killed_at is not None and finishes
            else None,
        }
    )
    if killer.spec.kills and len(killer.killed) != killer.spec.kills:
        result.checks.append(CheckResult("kills", False, f"killed {len(killer.killed)} of {killer.spec.kills} workers"))


def run_trial(dsn: str, spec: WorkloadSpec, block: int, log_dir: Path, progress: Progress) -> TrialResult:
    """Run one trial (module docstring). Never raises for a failed trial: the result carries
    ``error`` and the failed checks, and ``ok`` is False."""
    result = TrialResult(
        workload=spec.workload,
        block=block,
        workers=spec.workers,
        concurrency=spec.concurrency,
        tasks=spec.tasks,
        options=asdict(spec),
    )
    through = {"TASKFORGE_DSN": spec.worker_dsn, "TASKFORGE_POOLER": spec.pooler} if spec.worker_dsn else {}
    harness = ProcessHarness(dsn, log_dir / result.label, env=through)
    killer: _Killer | None = None
    before: writes.WriteSnapshot | None = None
    cpu_before = cpu_after = None
    progress.start(f"{result.label} ({spec.task_type} x{spec.tasks})", spec.tasks)
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            for _ in range(spec.schedulers):
                harness.scheduler("--max-interval-seconds", f"{spec.scheduler_interval_seconds:g}")
            for _ in range(spec.workers):
                harness.worker(
                    *SYNTHETIC,
                    "--queue",
                    BENCH_QUEUE,
                    "--concurrency",
                    str(spec.concurrency),
                    "--prefetch",
                    str(spec.prefetch),
                    "--lease-seconds",
                    f"{spec.lease_seconds:g}",
                )
            wait_workers_live(conn, harness, spec.start_timeout_seconds)
            if spec.warmup:
                warm = submit_batch(dsn, "noop", {}, spec.warmup)
                wait_terminal(conn, harness, warm, spec.timeout_seconds)
            before = writes.snapshot(conn)
            cpu_before = cpu.snapshot(conn, harness)
            task_ids = submit_measured(dsn, spec)
            killer = _Killer(spec, conn, harness, task_ids)
            wait_terminal(conn, harness, task_ids, spec.timeout_seconds, progress, killer)
            cpu_after = cpu.snapshot(conn, harness)
        except TrialFailed as exc:
            result.error = str(exc)
        finally:
            result.peak_rss_kib = memory.peak_rss_kib(harness)
            result.exit_codes = harness.stop_all(spec.stop_timeout_seconds)
        if killer is not None:
            if before is not None:
                result.metrics["writes_per_task"] = writes.per_task(conn, before, writes.snapshot(conn), spec.tasks)
            if not spec.kills:  # a killed worker's CPU is lost with it: no figure
                result.metrics["cpu_per_task"] = cpu.per_task(cpu_before, cpu_after, spec.tasks)
            tasks, attempts = read_history(conn, killer.task_ids)
            result.checks = trust.check_history(killer.task_ids, tasks, attempts, spec.expectation)
            if spec.flow is not None:
                result.checks += flow.checks(spec.flow, killer.task_ids, attempts)
            _span_metrics(result, attempts)
            if spec.kills:
                _recovery_metrics(result, attempts, killer)
            result.checks += database_checks(conn)
            result.checks.append(_exit_checks(result.exit_codes, {p.name for p in killer.killed}))
    result.ok = result.error is None and not result.failed_checks()
    progress.finish(_summary(result))
    return result


def _summary(result: TrialResult) -> str:
    if result.error:
        return f"FAILED: {result.error.splitlines()[0]}"
    failed = result.failed_checks()
    rate = f"{result.throughput:,.1f} tasks/s" if result.throughput else "no throughput"
    if failed:
        return f"{rate}; TRUST CHECK FAILED: " + "; ".join(f"{c.name}: {c.detail}" for c in failed)
    return f"{rate} over {result.span_seconds:.2f} s; trust checks passed"


def _submit_noop(conn: psycopg.Connection) -> int:
    """One ``noop`` task through ``tf_submit`` in a transaction of its own on ``conn`` (autocommit);
    returns its task id."""
    with conn.transaction():
        row = conn.execute(
            statements.BENCH_SUBMIT, {"task_type": "noop", "payload": Jsonb({}), "queue": BENCH_QUEUE}
        ).fetchone()
    if row is None:
        raise TrialFailed("tf_submit returned no row")
    return int(row[0])


def run_pickup(
    dsn: str,
    count: int,
    interval_seconds: float,
    block: int,
    log_dir: Path,
    progress: Progress,
    warmup: int = 10,
    timeout_seconds: float = 120.0,
) -> TrialResult:
    """One idle worker; ``count`` noop tasks submitted one at a time, each in its own transaction,
    ``interval_seconds`` apart (harness clock), all from one session opened before them, as an
    application's pooled connection would (a new connection per task would put its backend's
    start-up and first plans into the figure); metrics: pickup latency = first attempt start -
    task creation (ms, database clock), median / p95 / max."""
    result = TrialResult(
        workload="pickup",
        block=block,
        workers=1,
        concurrency=1,
        tasks=count,
        options={"interval_seconds": interval_seconds, "warmup": warmup},
    )
    harness = ProcessHarness(dsn, log_dir / result.label)
    task_ids: list[int] = []
    progress.start(f"{result.label} (noop x{count}, one at a time)", count)
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            harness.worker(*SYNTHETIC, "--queue", BENCH_QUEUE)
            wait_workers_live(conn, harness, 60.0)
            with psycopg.connect(dsn, autocommit=True) as submitter:
                if warmup:  # through the same session: its first plans are warm-up too
                    wait_terminal(conn, harness, [_submit_noop(submitter) for _ in range(warmup)], timeout_seconds)
                for i in range(count):
                    task_ids.append(_submit_noop(submitter))
                    progress.update(i + 1)
                    time.sleep(interval_seconds)
            wait_terminal(conn, harness, task_ids, timeout_seconds)
        except TrialFailed as exc:
            result.error = str(exc)
        finally:
            result.peak_rss_kib = memory.peak_rss_kib(harness)
            result.exit_codes = harness.stop_all()
        tasks, attempts = read_history(conn, task_ids)
        result.checks = trust.check_history(task_ids, tasks, attempts, "once") + database_checks(conn)
        result.checks.append(_exit_checks(result.exit_codes, set()))
    created = {t.task_id: t.created_at for t in tasks if t.created_at is not None}
    latencies = sorted(
        (a.started_at - created[a.task_id]).total_seconds() * 1000.0
        for a in attempts
        if a.attempt_number == 1 and a.task_id in created and a.started_at is not None
    )
    result.metrics = {
        "pickup_ms": latencies,
        "pickup_p50_ms": stats.percentile(latencies, 50),
        "pickup_p95_ms": stats.percentile(latencies, 95),
        "pickup_max_ms": max(latencies) if latencies else None,
    }
    result.ok = result.error is None and not result.failed_checks()
    p50 = result.metrics["pickup_p50_ms"]
    progress.finish(f"pickup median {p50:.1f} ms" if p50 is not None and result.ok else _summary(result))
    return result
