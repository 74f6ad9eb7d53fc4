"""``taskforge bench soak``: a fixed load for N minutes on a private server with autovacuum on.

A run (:func:`run_soak`):

1. starts a PostgreSQL server of its own (:mod:`taskforge.private_server`: ``initdb`` in a
   temporary folder, ``autovacuum = on``, ``fsync = on``, every other setting PostgreSQL's
   default), creates and migrates one database, and deletes the server at the end;
2. starts ``workers`` ``taskforge worker`` processes (``--concurrency 1``, queue ``bench``, the
   synthetic task types) and one ``taskforge scheduler --retain-seconds R
   --prune-interval-seconds P`` (retention that can act within the run);
3. **peak**: submits ``peak_tasks`` noop tasks in one transaction after a warm-up and measures
   how fast the workers drain them (tasks / (last attempt finish - first attempt start),
   database timestamps, as E1);
4. **soak**: for ``minutes`` minutes, a submitter process (``python -m
   taskforge.benchmarks.soak submit``) submits noop tasks at ``fraction`` x peak minus the
   probe's rate, in one transaction per ``submit_tick_seconds`` tick (an open loop: the rate
   does not wait for the workers); a claim probe in this process runs the single-slot loop of
   ``longtx`` (:class:`.longtx.ClaimLoop`: tf_submit, tf_claim timed, tf_finalize) on the same
   queue ``probe_per_second`` times a second; a sampler reads every ``sample_seconds`` what vacuum
   and the tables look like (:class:`Sample`). With ``hold_snapshot_seconds``, another session
   opens a REPEATABLE READ transaction at ``hold_start_fraction`` of the soak, reads
   ``taskforge.tasks`` (taking its snapshot), holds it that long, and rolls back;
5. stops the submitter, lets the workers drain what is left, stops every process (SIGTERM) and
   checks that nothing is left running and ``tf_invariant_violations`` is empty.

Clocks: throughput is counted from ``attempts.finished_at`` (the database clock), in the
interval between two samples' database instants, each taken 2 s back (``FINISH_LAG_SECONDS``)
so that an attempt whose transaction commits a moment after its ``finished_at`` is not missed;
claim latencies are the probe's client round trips (``time.perf_counter``, ms); every "seconds
since the soak started" is this process's monotonic clock. Sizes are bytes
(``pg_table_size``, ``pg_indexes_size``); dead tuples and index entries read come from the
server's cumulative statistics (``pg_stat_user_tables``, ``pg_stat_user_indexes``), which a
backend publishes at most once a second: a sample may lag by that much.

The figures, the verdict per target and the charts are :mod:`.soak_report`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.types.json import Jsonb

from .. import database as db, sql
from ..private_server import PrivateServer
from ..processes import ProcessHarness
from ..progress import Progress
from . import environment, statements, stats
from .longtx import HOLDER_NAME, ClaimLoop, held_snapshot
from .results import CheckResult
from .workloads import SYNTHETIC, TrialFailed, database_checks, submit_batch, wait_terminal, wait_workers_live

__all__ = ["FULL", "QUICK", "SoakConfig", "SoakSizes", "longest_hold_seconds", "run_soak"]

QUEUE = "bench"
DATABASE = "taskforge_soak"
#: Settings of the private server; everything else is PostgreSQL's default.
SERVER_SETTINGS = {"autovacuum": "on", "fsync": "on", "max_connections": "100"}
#: How far behind the database's clock the throughput count stops (seconds; module docstring).
FINISH_LAG_SECONDS = 2.0


@dataclass(frozen=True)
class SoakSizes:
    """The shape of a soak. Seconds unless named otherwise; ``fraction`` of the measured peak.

    ``bucket_seconds``: the width of the report's per-"minute" rows (60; 10 in the quick form);
    ``window_seconds``: "first/last 5 minutes" of the throughput target (300; shortened to a
    quarter of the run when the run is shorter than 20 minutes)."""

    workers: int = 2
    fraction: float = 0.6
    peak_tasks: int = 5000
    warmup_tasks: int = 100
    retain_seconds: float = 120.0
    prune_interval_seconds: float = 10.0
    sample_seconds: float = 5.0
    probe_per_second: float = 20.0
    submit_tick_seconds: float = 0.05
    bucket_seconds: float = 60.0
    window_seconds: float = 300.0
    hold_start_fraction: float = 0.4
    drain_timeout_seconds: float = 300.0


FULL = SoakSizes()
#: A smoke test of well under a minute (the test suite's).
QUICK = SoakSizes(
    peak_tasks=300,
    warmup_tasks=20,
    retain_seconds=8.0,
    prune_interval_seconds=2.0,
    sample_seconds=1.0,
    probe_per_second=20.0,
    bucket_seconds=10.0,
    window_seconds=10.0,
    drain_timeout_seconds=60.0,
)


def longest_hold_seconds(minutes: float, sizes: SoakSizes = FULL) -> float:
    """The snapshot hold must end before the soak does: it starts at ``hold_start_fraction`` of
    the run, so it lasts less than the rest (seconds, rounded to a microsecond so that a hold of
    exactly the rest is refused whatever the float arithmetic of 0.6 x minutes x 60 gives)."""
    return round((1.0 - sizes.hold_start_fraction) * minutes * 60.0, 6)


@dataclass(frozen=True)
class SoakConfig:
    """One invocation: how long (minutes), the optional snapshot hold (seconds), the bundle."""

    minutes: float
    out_dir: Path
    hold_snapshot_seconds: float | None = None
    sizes: SoakSizes = FULL
    quick: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.minutes) and self.minutes > 0):
            raise ValueError(f"minutes: must be a finite number > 0, got {self.minutes!r}")
        if self.hold_snapshot_seconds is not None:
            longest = longest_hold_seconds(self.minutes, self.sizes)
            if not (math.isfinite(self.hold_snapshot_seconds) and 0 < self.hold_snapshot_seconds < longest):
                raise ValueError(
                    f"hold_snapshot_seconds: must be > 0 and end before the soak does (< {longest:g} s "
                    f"for a soak of {self.minutes:g} min), got {self.hold_snapshot_seconds!r}"
                )

    @property
    def seconds(self) -> float:
        return self.minutes * 60.0

    @property
    def hold_window(self) -> tuple[float, float] | None:
        """(start, end) of the snapshot hold in seconds since the soak started; None without one."""
        if not self.hold_snapshot_seconds:
            return None
        start = self.sizes.hold_start_fraction * self.seconds
        return start, start + self.hold_snapshot_seconds


@dataclass
class Sample:
    """What the sampler read at ``at`` seconds since the soak started (monotonic clock).

    ``finished``: attempts that SUCCEEDED in (previous sample's database instant - lag, this
    one's - lag]; ``interval_seconds`` that interval's length (database clock). ``tables``:
    per table ``{live, dead, table_bytes, index_bytes, autovacuum_count, vacuum_count,
    inserted}``; ``task_index_reads``/``task_index_scans``: cumulative over every index of
    ``taskforge.tasks``; ``xmin_age``: the oldest snapshot's age in transactions; ``backlog``:
    QUEUED tasks."""

    at: float
    finished: int
    interval_seconds: float
    tables: dict[str, dict[str, int]]
    task_index_reads: int
    task_index_scans: int
    index_reads: dict[str, int]
    xmin_age: int
    backlog: int


@dataclass
class SoakRun:
    """Everything measured; :mod:`.soak_report` turns it into figures and verdicts."""

    config: dict[str, Any]
    environment: dict[str, Any] = field(default_factory=dict)
    peak: dict[str, Any] = field(default_factory=dict)
    offered_per_second: float = 0.0
    submit_per_second: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    #: (seconds since the soak started, claim round trip ms, whether the claim returned a task)
    probes: list[tuple[float, float, bool]] = field(default_factory=list)
    hold: dict[str, Any] | None = None
    checks: list[CheckResult] = field(default_factory=list)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None
    soak_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["ok"] = self.ok
        return data


# --- the submitter (a child process) ------------------------------------------------------------


def submit_forever(dsn: str, rate: float, tick: float, queue: str = QUEUE) -> int:
    """Submit noop tasks at ``rate`` per second until SIGTERM, one transaction per ``tick``
    seconds holding the tasks due by then (monotonic clock; a late tick catches up, so the
    rate holds on average). Returns the number submitted."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    submitted = 0
    params = {"task_type": "noop", "payload": Jsonb({}), "queue": queue}
    with psycopg.connect(dsn) as conn:
        started = time.monotonic()
        while not stop.is_set():
            due = int(rate * (time.monotonic() - started)) - submitted
            if due > 0:
                with conn.cursor() as cur:
                    cur.executemany(statements.BENCH_SUBMIT, [params] * due)
                conn.commit()
                submitted += due
            stop.wait(tick)
    print(f"submitted {submitted} tasks in {time.monotonic() - started:.1f} s", flush=True)
    return submitted


def _submitter_main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m taskforge.benchmarks.soak")
    sub = parser.add_subparsers(dest="command", required=True)
    submit = sub.add_parser("submit", help="submit noop tasks at a fixed rate until SIGTERM ($TASKFORGE_DSN)")
    submit.add_argument("--rate", type=float, required=True, help="tasks per second")
    submit.add_argument("--tick", type=float, default=0.05, help="seconds between transactions")
    args = parser.parse_args(argv)
    submit_forever(db.resolve_dsn(None), args.rate, args.tick)


# --- sampling --------------------------------------------------------------------------------------


class _Sampler:
    """Reads :class:`Sample` rows on its own connection (autocommit)."""

    def __init__(self, dsn: str):
        """Opened just before the soak's load starts: the first count runs from the database's
        instant now (no lag: what finished before, the peak phase's tasks, must not count)."""
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.started = time.monotonic()
        self.mark: dt.datetime = sql.one_value(self.conn, statements.BENCH_DB_NOW)

    def _db_mark(self) -> dt.datetime:
        now: dt.datetime = sql.one_value(self.conn, statements.BENCH_DB_NOW)
        return now - dt.timedelta(seconds=FINISH_LAG_SECONDS)

    def sample(self) -> Sample:
        mark = self._db_mark()
        finished = sql.one_value(self.conn, statements.BENCH_SOAK_FINISHED, {"after": self.mark, "until": mark})
        interval = (mark - self.mark).total_seconds()
        self.mark = mark
        tables = {
            name: {
                "live": live,
                "dead": dead,
                "table_bytes": size,
                "index_bytes": index,
                "autovacuum_count": autovacuums,
                "vacuum_count": vacuums,
                "inserted": inserted,
            }
            for name, live, dead, size, index, autovacuums, vacuums, inserted in self.conn.execute(
                statements.BENCH_SOAK_TABLES
            )
        }
        indexes = {name: (reads, scans) for name, reads, scans in self.conn.execute(statements.BENCH_SOAK_TASK_INDEXES)}
        xmin_age, backlog = sql.one_row(self.conn, statements.BENCH_SOAK_XMIN_AND_BACKLOG)
        return Sample(
            at=time.monotonic() - self.started,
            finished=finished,
            interval_seconds=interval,
            tables=tables,
            task_index_reads=sum(r for r, _ in indexes.values()),
            task_index_scans=sum(s for _, s in indexes.values()),
            index_reads={name: r for name, (r, _) in indexes.items()},
            xmin_age=xmin_age,
            backlog=backlog,
        )

    def close(self) -> None:
        self.conn.close()


class _Probe(threading.Thread):
    """The claim probe: :class:`.longtx.ClaimLoop` cycles at a fixed rate on its own connection."""

    def __init__(self, dsn: str, per_second: float, started: float, out: list[tuple[float, float, bool]]):
        super().__init__(name="soak-probe", daemon=True)
        self.dsn, self.period, self.started, self.out = dsn, 1.0 / per_second, started, out
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                loop = ClaimLoop(conn, name="bench-soak-probe")
                due = time.monotonic()
                while not self.halt.is_set():
                    loop.task_ids.clear()  # the loop's list would grow for hours; nothing reads it
                    loop.task_ids.append(
                        sql.one_value(
                            conn,
                            statements.BENCH_SUBMIT,
                            {"task_type": "noop", "payload": Jsonb({}), "queue": QUEUE},
                        )
                    )
                    began = time.perf_counter()
                    rows = loop.claim()
                    ms = (time.perf_counter() - began) * 1000.0
                    at = time.monotonic() - self.started
                    for row in rows:
                        loop.finalize(row)
                    self.out.append((at, ms, bool(rows)))
                    due = max(due + self.period, time.monotonic())
                    self.halt.wait(max(0.0, due - time.monotonic()))
                sql.one_value(conn, sql.DEREGISTER_WORKER, {"worker_id": loop.worker_id})
        except Exception as exc:  # noqa: BLE001 - reported by the run, never lost in a thread
            self.error = exc


# --- the run ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def private_database(progress: Progress) -> Iterator[tuple[str, PrivateServer]]:
    """A private server (:data:`SERVER_SETTINGS`) with one migrated database; destroyed on exit."""
    server = PrivateServer(settings=dict(SERVER_SETTINGS))
    try:
        progress.note(f"soak: starting a private PostgreSQL server (port {server.port}, autovacuum on)")
        server.start()
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            admin.execute(pgsql.SQL(statements.BENCH_CREATE_DATABASE).format(name=pgsql.Identifier(DATABASE)))
        dsn = server.dsn(DATABASE)
        db.migrate(dsn)
        yield dsn, server
    finally:
        server.destroy()


def _measure_peak(dsn: str, conn: psycopg.Connection, harness: ProcessHarness, s: SoakSizes) -> dict[str, Any]:
    """Warm up, then drain ``peak_tasks`` submitted in one transaction; tasks/s by database time."""
    wait_terminal(conn, harness, submit_batch(dsn, "noop", {}, s.warmup_tasks, QUEUE), s.drain_timeout_seconds)
    ids = submit_batch(dsn, "noop", {}, s.peak_tasks, QUEUE)
    wait_terminal(conn, harness, ids, s.drain_timeout_seconds)
    first, last = sql.one_row(conn, statements.BENCH_SOAK_SPAN, {"task_ids": ids})
    return {
        "tasks": len(ids),
        "span_seconds": stats.span_seconds(first, last),
        "tasks_per_second": stats.throughput(len(ids), first, last),
    }


def run_soak(cfg: SoakConfig, progress: Progress | None = None) -> SoakRun:
    """Run the soak (module docstring) and return what was measured; never raises for a failed
    run (``error`` and ``checks`` say what failed). Process logs go to ``OUT/logs``."""
    progress = progress or Progress(noun="s")
    s = cfg.sizes
    run = SoakRun(
        config={
            "minutes": cfg.minutes,
            "hold_snapshot_seconds": cfg.hold_snapshot_seconds,
            "quick": cfg.quick,
            "hold_window": cfg.hold_window,
            "sizes": dataclasses.asdict(s),
            "server_settings": SERVER_SETTINGS,
        }
    )
    with private_database(progress) as (dsn, server):
        run.environment = environment.collect(server.dsn())
        harness = ProcessHarness(dsn, cfg.out_dir / "logs")
        probe: _Probe | None = None
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                harness.scheduler(
                    "--retain-seconds",
                    f"{s.retain_seconds:g}",
                    "--prune-interval-seconds",
                    f"{s.prune_interval_seconds:g}",
                    log_level="INFO",
                )
                for _ in range(s.workers):
                    harness.worker(*SYNTHETIC, "--queue", QUEUE, "--concurrency", "1")
                wait_workers_live(conn, harness, 60.0)
                progress.note(f"soak: measuring the peak with {s.workers} worker process(es)")
                run.peak = _measure_peak(dsn, conn, harness, s)
                run.offered_per_second = s.fraction * run.peak["tasks_per_second"]
                run.submit_per_second = max(1.0, run.offered_per_second - s.probe_per_second)
                progress.note(
                    f"soak: peak {run.peak['tasks_per_second']:,.0f} tasks/s; offering "
                    f"{run.offered_per_second:,.0f} tasks/s ({s.fraction:g} x peak) for {cfg.minutes:g} min"
                )
                sampler = _Sampler(dsn)
                started = sampler.started
                harness.start(
                    [
                        sys.executable,
                        "-m",
                        "taskforge.benchmarks.soak",
                        "submit",
                        "--rate",
                        f"{run.submit_per_second:.3f}",
                        "--tick",
                        f"{s.submit_tick_seconds:g}",
                    ],
                    kind="submitter",
                    name="submitter",
                )
                probe = _Probe(dsn, s.probe_per_second, started, run.probes)
                probe.start()
                run.hold = _soak_loop(cfg, dsn, harness, probe, sampler, run, progress)
                run.soak_seconds = time.monotonic() - started
                for proc in harness.alive("submitter"):
                    proc.stop()
                probe.halt.set()
                probe.join(30)
                if probe.error is not None:
                    raise TrialFailed(f"the claim probe failed: {type(probe.error).__name__}: {probe.error}")
                _drain(conn, harness, s.drain_timeout_seconds)
            except (TrialFailed, psycopg.Error) as exc:
                run.error = f"{type(exc).__name__}: {exc}"
            finally:
                if probe is not None:
                    probe.halt.set()
                    probe.join(30)
                run.exit_codes = harness.stop_all()
            run.checks = database_checks(conn)
            bad = [f"{name} exited {code}" for name, code in run.exit_codes.items() if code != 0]
            run.checks.append(
                CheckResult(
                    "clean_exits", not bad, "; ".join(bad) or f"{len(run.exit_codes)} processes stopped with code 0"
                )
            )
    return run


def _soak_loop(
    cfg: SoakConfig,
    dsn: str,
    harness: ProcessHarness,
    probe: _Probe,
    sampler: _Sampler,
    run: SoakRun,
    progress: Progress,
) -> dict[str, Any] | None:
    """Sample until the soak's end, opening and releasing the snapshot on time; returns the
    hold's record (its window as sampled, the holder's xmin age at release) or None."""
    s = cfg.sizes
    window = cfg.hold_window
    hold: dict[str, Any] | None = None
    holder: contextlib.ExitStack | None = None
    started = sampler.started
    total = max(1, round(cfg.seconds))
    progress.start(f"soak ({cfg.minutes:g} min)", total)
    try:
        next_sample = started + s.sample_seconds
        while (now := time.monotonic()) < started + cfg.seconds:
            elapsed = now - started
            if window is not None and hold is None and elapsed >= window[0]:
                holder = contextlib.ExitStack()
                holder.enter_context(held_snapshot(dsn))
                hold = {"started_at": time.monotonic() - started, "seconds": cfg.hold_snapshot_seconds}
                progress.note(f"soak: snapshot taken at {hold['started_at']:.0f} s for {cfg.hold_snapshot_seconds:g} s")
            if holder is not None and hold is not None and elapsed >= hold["started_at"] + hold["seconds"]:
                hold["xmin_age_at_release"] = sql.one_value(
                    sampler.conn, statements.BENCH_LONGTX_HOLDER_AGE, {"name": HOLDER_NAME}
                )
                holder.close()
                holder = None
                hold["released_at"] = time.monotonic() - started
                progress.note(f"soak: snapshot released at {hold['released_at']:.0f} s")
            if now >= next_sample:
                run.samples.append(sampler.sample())
                next_sample += s.sample_seconds
                dead = harness.exited_unexpectedly()
                if dead:
                    raise TrialFailed(f"{dead[0].name} exited with code {dead[0].returncode}:\n{dead[0].tail()}")
                if probe.error is not None:
                    raise TrialFailed(f"the claim probe failed: {type(probe.error).__name__}: {probe.error}")
                last = run.samples[-1]
                progress.update(
                    min(total, int(elapsed)),
                    f"{last.finished / max(last.interval_seconds, 1e-9):,.0f} tasks/s, backlog {last.backlog}, "
                    f"dead tasks {last.tables.get('tasks', {}).get('dead', 0):,}",
                )
            time.sleep(0.05)
        run.samples.append(sampler.sample())
    finally:
        if holder is not None:
            holder.close()
        sampler.close()
        progress.finish(f"{len(run.samples)} samples, {len(run.probes)} probe claims")
    return hold


def _drain(conn: psycopg.Connection, harness: ProcessHarness, timeout: float) -> None:
    """Wait until no task is QUEUED or RUNNING (the workers finish what the submitter left)."""
    deadline = time.monotonic() + timeout
    while sql.one_value(conn, statements.BENCH_SOAK_UNFINISHED):
        dead = [p for p in harness.exited_unexpectedly() if p.kind != "submitter"]  # the submitter was stopped
        if dead:
            raise TrialFailed(f"{dead[0].name} exited with code {dead[0].returncode} while draining:\n{dead[0].tail()}")
        if time.monotonic() > deadline:
            raise TrialFailed(f"tasks still unfinished {timeout:g} s after the soak")
        time.sleep(0.2)


if __name__ == "__main__":  # pragma: no cover - the submitter child process
    _submitter_main()
