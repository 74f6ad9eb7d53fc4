"""Sizes, blocks and the order a benchmark run goes in; writes the bundle as results arrive.

A block is one fresh database (created, migrated, dropped afterwards, also on failure or
Ctrl-C). E1 and E2 run every worker count in each block (E1 also its batched variant); E5, E6,
pickup, each flow variant's trial and each peer trial get a block of their own; the ceiling
gets one block per trial with every client count in it; the long-transaction workload gets two
per trial (one without and one with a snapshot held, so neither inherits the other's dead
rows). The peers are installed once per run, then each block runs every peer at every process
count and in its batched mode; right before each trial of a peer in :data:`BESIDE`, TaskForge's
E1 runs the same mode on a fresh database of its own (``e1-beside-<peer>``,
``e1-batched-beside-<peer>``), so that the figures of a ratio with a target of 1.25 x are
minutes apart, not an hour (in a full run the E1 section comes first and the peers last, and
this shared machine's speed drifts in between).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..progress import Progress
from . import ceiling, charts, environment, flow, longtx, peers, pooler, summary, targets, workloads
from .database import fresh_database
from .pgbouncer import PgBouncerUnavailable, available as pgbouncer_available
from .report import Bundle, render_markdown
from .results import CeilingPoint, TrialResult
from .workloads import WorkloadSpec

__all__ = ["FULL", "QUICK", "WORKLOADS", "BenchConfig", "BenchRun", "Sizes", "default_out_dir", "run"]

WORKLOADS = ("e1", "e2", "e5", "e6", "pickup", "longtx", "async", "flow", "pooler", "ceiling", "peer")

#: The peers TaskForge's E1 runs beside (module docstring): those of the 1.25 x targets.
BESIDE = (targets.GRAPHILE,)


@dataclass(frozen=True)
class Sizes:
    """How big each workload is (tasks; seconds for durations; ms for task payloads).

    ``batch_size`` is B: E1 batched's ``--concurrency`` (so its claim size), the rows per cycle of
    the batched ceiling scripts (a2, c-batch), and the batched mode of peers whose docs leave the
    number to the user. ``batched_tasks``: the tasks of E1 batched and the jobs of every peer's
    batched mode."""

    worker_counts: tuple[int, ...]
    blocks: int
    warmup: int
    e1_tasks: int
    batch_size: int
    batched_tasks: int
    e2_tasks: int
    e5_tasks: int
    e5_workers: int
    e5_schedulers: int
    e6_tasks: int
    e6_workers: int
    e6_schedulers: int
    e6_kills: int
    e6_lease_seconds: float
    pickup_tasks: int
    ceiling_seconds: float
    timeout_seconds: float
    e2_sleep_ms: int = 50
    e6_sleep_ms: int = 500
    e5_retry_delay_seconds: float = 0.1
    pickup_interval_seconds: float = 0.05
    longtx_seconds: float = 100.0
    # async: async_sleep tasks on one worker process (ideal: concurrency / sleep per second).
    async_tasks: int = 5000
    async_concurrency: int = 1000
    async_wide_tasks: int = 10000
    async_wide_concurrency: int = 5000
    async_sleep_ms: int = 1000
    # flow: E1's tasks (e1_tasks at one slot, batched_tasks at B slots) with one feature each;
    # tasks per dependency chain and per ordering key, and the concurrency keys of e1-ckeys.
    flow_group: int = 100
    flow_keys: int = 10
    # pooler: E1 and E2 on processes x concurrency slots, direct and through a PgBouncer of
    # pool_size server connections in transaction mode (E2's tasks sleep pooler_sleep_ms).
    pooler_processes: int = 10
    pooler_concurrency: int = 100
    pooler_pool_size: int = 20
    pooler_e1_tasks: int = 5000
    pooler_e2_tasks: int = 2000
    pooler_sleep_ms: int = 500


#: The full sizes of the reference workloads (docs/design.md §9).
FULL = Sizes(
    worker_counts=(1, 4, 8, 16),
    blocks=3,
    warmup=100,
    e1_tasks=5000,
    batch_size=64,
    batched_tasks=20000,
    e2_tasks=1000,
    e5_tasks=3000,
    e5_workers=10,
    e5_schedulers=3,
    e6_tasks=1000,
    e6_workers=20,
    e6_schedulers=3,
    e6_kills=10,
    e6_lease_seconds=5.0,
    pickup_tasks=50,
    ceiling_seconds=10.0,
    timeout_seconds=900.0,
)
#: Small enough that `taskforge bench all --quick` takes a minute or two on 2 cores.
QUICK = Sizes(
    worker_counts=(1, 2),
    blocks=1,
    warmup=20,
    e1_tasks=300,
    batch_size=64,
    batched_tasks=600,
    e2_tasks=60,
    e5_tasks=100,
    e5_workers=3,
    e5_schedulers=1,
    e6_tasks=60,
    e6_workers=4,
    e6_schedulers=1,
    e6_kills=2,
    e6_lease_seconds=2.0,
    pickup_tasks=10,
    ceiling_seconds=3.0,
    timeout_seconds=180.0,
    longtx_seconds=3.0,
    async_tasks=300,
    async_concurrency=100,
    async_wide_tasks=600,
    async_wide_concurrency=300,
    async_sleep_ms=200,
    flow_group=5,
    pooler_processes=2,
    pooler_concurrency=10,
    pooler_pool_size=4,
    pooler_e1_tasks=300,
    pooler_e2_tasks=100,
    pooler_sleep_ms=200,
)


@dataclass
class BenchConfig:
    """One invocation: which server, where the bundle goes, and the sizes."""

    admin_dsn: str
    out_dir: Path
    sizes: Sizes
    quick: bool = False
    #: Where the peers' environments live (default ``<out>/peers``); reused when present.
    peer_dir: Path | None = None
    #: The peers to run (default: all of peers.NAMES).
    peer_names: tuple[str, ...] = peers.NAMES


@dataclass
class BenchRun:
    """What a run produced so far."""

    trials: list[TrialResult] = field(default_factory=list)
    points: list[CeilingPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Peers that could not run on this machine, with the reason (not a failure).
    skipped_peers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every trial passed its trust checks and every pgbench point completed."""
        return all(t.ok for t in self.trials) and all(p.ok for p in self.points)


def default_out_dir() -> Path:
    """``bench-results/<UTC timestamp>``."""
    return Path("bench-results") / dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def sizes_with(
    sizes: Sizes, trials: int | None, worker_counts: Sequence[int] | None, hold_seconds: float | None = None
) -> Sizes:
    """``sizes`` with the number of blocks, the worker counts and the long-transaction hold
    (seconds) overridden where given."""
    changes: dict[str, Any] = {}
    if trials is not None:
        changes["blocks"] = trials
    if worker_counts:
        changes["worker_counts"] = tuple(worker_counts)
    if hold_seconds is not None:
        changes["longtx_seconds"] = hold_seconds
    return dataclasses.replace(sizes, **changes)


class _Run:
    def __init__(self, cfg: BenchConfig, bundle: Bundle, progress: Progress, state: BenchRun):
        self.cfg, self.bundle, self.progress, self.state = cfg, bundle, progress, state
        self.s = cfg.sizes

    def keep(self, result: TrialResult) -> bool:
        self.state.trials.append(result)
        self.bundle.trial(result)
        return result.ok

    def spec(self, workload: str, task_type: str, tasks: int, workers: int, **extra: Any) -> WorkloadSpec:
        return WorkloadSpec(
            workload=workload,
            task_type=task_type,
            tasks=tasks,
            workers=workers,
            warmup=self.s.warmup,
            timeout_seconds=self.s.timeout_seconds,
            **extra,
        )

    def e1_spec(self, workload: str, workers: int) -> WorkloadSpec:
        """E1's tasks on ``workers`` one-slot processes."""
        return self.spec(workload, "noop", self.s.e1_tasks, workers)

    def e1_batched_spec(self, workload: str) -> WorkloadSpec:
        """E1 batched: its tasks on one process with ``batch_size`` slots."""
        return self.spec(workload, "noop", self.s.batched_tasks, 1, concurrency=self.s.batch_size)

    def scaling(self, workload: str, specs: Callable[[int], list[WorkloadSpec]]) -> None:
        for block in range(1, self.s.blocks + 1):
            self.progress.note(f"{workload}: block {block}/{self.s.blocks} on a fresh database")
            with fresh_database(self.cfg.admin_dsn) as dsn:
                for spec in (s for workers in self.s.worker_counts for s in specs(workers)):
                    if not self.keep(workloads.run_trial(dsn, spec, block, self.bundle.log_dir, self.progress)):
                        break  # a failed trial may leave tasks behind: this block's numbers stop here

    def e1(self) -> None:
        """E1 at every worker count; once per block after them, one process batched and one
        process with one slot and ``--prefetch 1`` (``e1-prefetch``)."""

        def specs(workers: int) -> list[WorkloadSpec]:
            out = [self.e1_spec("e1", workers)]
            if workers == self.s.worker_counts[-1]:  # once per block, after the plain counts
                out.append(self.e1_batched_spec("e1-batched"))
                out.append(self.spec("e1-prefetch", "noop", self.s.e1_tasks, 1, prefetch=1))
            return out

        self.scaling("e1", specs)

    def e2(self) -> None:
        """E2 at every worker count, each count twice in a row: one-slot workers as they come,
        then with ``--prefetch 1`` (``e2-prefetch``: the next task claimed while one runs)."""

        def specs(workers: int) -> list[WorkloadSpec]:
            payload = {"ms": self.s.e2_sleep_ms}
            return [
                self.spec("e2", "sleep", self.s.e2_tasks, workers, payload=payload),
                self.spec("e2-prefetch", "sleep", self.s.e2_tasks, workers, payload=payload, prefetch=1),
            ]

        self.scaling("e2", specs)

    def e5(self) -> None:
        for block in range(1, self.s.blocks + 1):
            with fresh_database(self.cfg.admin_dsn) as dsn:
                workloads.register_fixed_backoff(dsn, "fail_once", self.s.e5_retry_delay_seconds)
                self.keep(
                    workloads.run_trial(
                        dsn,
                        self.spec(
                            "e5",
                            "fail_once",
                            self.s.e5_tasks,
                            self.s.e5_workers,
                            schedulers=self.s.e5_schedulers,
                            scheduler_interval_seconds=self.s.e5_retry_delay_seconds,
                            expectation="fail_once",
                        ),
                        block,
                        self.bundle.log_dir,
                        self.progress,
                    )
                )

    def e6(self) -> None:
        for block in range(1, self.s.blocks + 1):
            with fresh_database(self.cfg.admin_dsn) as dsn:
                self.keep(
                    workloads.run_trial(
                        dsn,
                        self.spec(
                            "e6",
                            "sleep",
                            self.s.e6_tasks,
                            self.s.e6_workers,
                            payload={"ms": self.s.e6_sleep_ms},
                            schedulers=self.s.e6_schedulers,
                            lease_seconds=self.s.e6_lease_seconds,
                            kills=self.s.e6_kills,
                            expectation="recovered",
                        ),
                        block,
                        self.bundle.log_dir,
                        self.progress,
                    )
                )

    def pickup(self) -> None:
        for block in range(1, self.s.blocks + 1):
            with fresh_database(self.cfg.admin_dsn) as dsn:
                self.keep(
                    workloads.run_pickup(
                        dsn,
                        self.s.pickup_tasks,
                        self.s.pickup_interval_seconds,
                        block,
                        self.bundle.log_dir,
                        self.progress,
                    )
                )

    def longtx(self) -> None:
        for block in range(1, self.s.blocks + 1):
            for held in (False, True):
                with fresh_database(self.cfg.admin_dsn) as dsn:
                    self.keep(
                        longtx.run_long_transaction(
                            dsn,
                            held=held,
                            seconds=self.s.longtx_seconds,
                            block=block,
                            log_dir=self.bundle.log_dir,
                            progress=self.progress,
                        )
                    )

    def async_workload(self) -> None:
        """``async``: async_sleep tasks on one process at high concurrency (docs/benchmarks.md)."""
        for block in range(1, self.s.blocks + 1):
            with fresh_database(self.cfg.admin_dsn) as dsn:
                for workload, tasks, concurrency in (
                    ("async", self.s.async_tasks, self.s.async_concurrency),
                    ("async-wide", self.s.async_wide_tasks, self.s.async_wide_concurrency),
                ):
                    spec = self.spec(
                        workload,
                        "async_sleep",
                        tasks,
                        1,
                        payload={"ms": self.s.async_sleep_ms},
                        concurrency=concurrency,
                    )
                    if not self.keep(workloads.run_trial(dsn, spec, block, self.bundle.log_dir, self.progress)):
                        break

    def flow(self) -> None:
        """``flow``: E1 on one process with one dependency or flow-control feature per variant
        (:mod:`.flow`), at one slot (``e1_tasks``) and batched (``batched_tasks`` at B slots);
        every trial in a database of its own, the variants' order rotated from block to block."""
        modes = ((False, self.s.e1_tasks, 1), (True, self.s.batched_tasks, self.s.batch_size))
        for block in range(1, self.s.blocks + 1):
            turn = (block - 1) % len(flow.VARIANTS)
            variants = flow.VARIANTS[turn:] + flow.VARIANTS[:turn]
            for batched, tasks, concurrency in modes:
                for variant in variants:
                    shape = flow.FlowShape(variant, group=self.s.flow_group, keys=self.s.flow_keys)
                    spec = self.spec(
                        flow.workload(variant, batched), "noop", tasks, 1, concurrency=concurrency, flow=shape
                    )
                    with fresh_database(self.cfg.admin_dsn) as dsn:
                        self.keep(workloads.run_trial(dsn, spec, block, self.bundle.log_dir, self.progress))

    def pooler(self) -> None:
        """``pooler``: E1 and E2 on many slots, direct then through PgBouncer (:mod:`.pooler`);
        skipped with a note when PgBouncer cannot run here."""
        why = pgbouncer_available()
        if why is not None:
            self.note(f"pooler skipped: {why}")
            return
        shapes: tuple[tuple[str, str, int, dict[str, Any]], ...] = (
            ("pooler-e1", "noop", self.s.pooler_e1_tasks, {}),
            ("pooler-e2", "sleep", self.s.pooler_e2_tasks, {"ms": self.s.pooler_sleep_ms}),
        )
        for block in range(1, self.s.blocks + 1):
            for workload, task_type, tasks, payload in shapes:
                spec = self.spec(
                    workload,
                    task_type,
                    tasks,
                    self.s.pooler_processes,
                    payload=payload,
                    concurrency=self.s.pooler_concurrency,
                )
                with fresh_database(self.cfg.admin_dsn) as dsn:
                    try:
                        results = pooler.run_pair(
                            dsn, spec, self.s.pooler_pool_size, block, self.bundle.log_dir, self.progress
                        )
                    except PgBouncerUnavailable as exc:
                        self.note(f"pooler skipped: {exc}")
                        return
                    for result in results:
                        self.keep(result)

    def ceiling(self) -> None:
        for block in range(1, self.s.blocks + 1):
            with fresh_database(self.cfg.admin_dsn) as dsn:
                scripts, skipped = ceiling.available_scripts(dsn, list(ceiling.SCRIPTS))
                for name, why in skipped.items():
                    self.note(f"ceiling script {name} skipped: {why}")
                for clients in self.s.worker_counts:
                    for script in scripts:
                        point = ceiling.measure_point(
                            dsn, script, clients, self.s.ceiling_seconds, block, self.progress, batch=self.s.batch_size
                        )
                        self.state.points.append(point)
                        self.bundle.ceiling(point)

    def note(self, text: str) -> None:
        if text not in self.state.notes:
            self.state.notes.append(text)
            self.progress.note(text)

    def install_peers(self) -> dict[str, peers.Installed]:
        """Install (or reuse) every selected peer; a peer that cannot run is skipped with a note.
        Records what was installed in environment.json under ``peers``."""
        directory = (self.cfg.peer_dir or self.cfg.out_dir / "peers").resolve()
        ready: dict[str, peers.Installed] = {}
        record: dict[str, Any] = {}
        for name in self.cfg.peer_names:
            try:
                ready[name] = peers.PEERS[name].install(directory / name, self.progress)
            except peers.PeerUnavailable as exc:
                self.state.skipped_peers[name] = str(exc)
                self.note(f"peer {name} skipped: {exc}")
                record[name] = {"skipped": str(exc)}
                continue
            record[name] = ready[name].record()
            self.note(
                f"peer {name}: "
                + ", ".join(f"{k} {v}" for k, v in ready[name].versions.items())
                + " ("
                + ", ".join(f"{k} {v}" for k, v in ready[name].runtime.items() if k != "executable")
                + ")"
            )
        self.bundle.add_environment("peers", record)
        return ready

    def peer(self) -> None:
        ready = self.install_peers()
        for block in range(1, self.s.blocks + 1):
            for name, installed in ready.items():
                peer = peers.PEERS[name]
                modes = [(peer.single_mode(n), self.s.e1_tasks) for n in self.s.worker_counts]
                modes.append((peer.batched_mode(self.s.batch_size), self.s.batched_tasks))
                for mode, jobs in modes:
                    if name in BESIDE:
                        self.beside(name, mode, block)
                    with fresh_database(self.cfg.admin_dsn, migrate=False) as dsn:
                        self.keep(
                            peers.run_peer_trial(
                                peer,
                                installed,
                                dsn,
                                mode,
                                jobs,
                                self.s.warmup,
                                block,
                                self.bundle.log_dir,
                                self.progress,
                                self.s.timeout_seconds,
                            )
                        )

    def beside(self, name: str, mode: peers.Mode, block: int) -> None:
        """TaskForge's E1 in ``mode`` (one slot per process, or E1 batched), on a fresh database
        as the peer's trial that follows gets one."""
        if mode.kind == "batched":
            spec = self.e1_batched_spec(f"e1-batched-beside-{name}")
        else:
            spec = self.e1_spec(f"e1-beside-{name}", mode.processes)
        with fresh_database(self.cfg.admin_dsn) as dsn:
            self.keep(workloads.run_trial(dsn, spec, block, self.bundle.log_dir, self.progress))


def run(selection: Sequence[str], cfg: BenchConfig, progress: Progress | None = None) -> BenchRun:
    """Run the selected workloads (in :data:`WORKLOADS` order) and write the bundle; returns
    what was measured (``.ok`` False when any trust check or trial failed). The report is written
    also when a workload fails or the run is interrupted."""
    progress = progress or Progress()
    env = environment.collect(cfg.admin_dsn)
    bundle = Bundle(cfg.out_dir, env)
    state = BenchRun()
    if cfg.quick:
        state.notes.append("QUICK run: tiny sizes for a smoke test; not comparable with the published figures")
    runner = _Run(cfg, bundle, progress, state)
    try:
        for name in WORKLOADS:
            if name in selection:
                getattr(runner, "async_workload" if name == "async" else name)()
    finally:
        progress.close()
        numbers = summary.summarize(state.trials, state.points, state.skipped_peers)
        drawn = charts.draw_all(numbers, cfg.out_dir / "charts")
        title = f"TaskForge benchmark{' (quick)' if cfg.quick else ''}: {', '.join(selection)}"
        bundle.finish(numbers, render_markdown(numbers, env, state.trials, state.points, drawn, title, state.notes))
    return state
