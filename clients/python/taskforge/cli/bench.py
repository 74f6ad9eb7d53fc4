"""``taskforge bench``: the reference workloads, the ceilings and the peers (docs/benchmarks.md).

Exit codes: 0 every trust check passed; 1 a trust check or a trial failed (the bundle is still
written and the report names the check); 2 bad options; 4 the server cannot be reached;
130 interrupted (databases dropped, processes stopped).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import NoReturn

import click
import psycopg

from .common import EXIT_DATABASE, OptionError, Seconds, Text, fail

WORKLOAD_CHOICES = (
    "e1",
    "e2",
    "e5",
    "e6",
    "pickup",
    "longtx",
    "async",
    "flow",
    "pooler",
    "ceiling",
    "peer",
    "soak",
    "all",
)


def _worker_counts(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        counts = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise OptionError("--workers", f"must be a comma-separated list of integers, got {value!r}") from None
    if not counts or any(not 1 <= c <= 256 for c in counts):
        raise OptionError("--workers", f"each count must be between 1 and 256, got {value!r}")
    return tuple(sorted(set(counts)))


def _peer_names(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    from ..benchmarks.peers import NAMES

    names = tuple(dict.fromkeys(v.strip().lower() for v in value.split(",") if v.strip()))
    unknown = [n for n in names if n not in NAMES]
    if not names or unknown:
        raise OptionError("--peers", f"must name peers among {', '.join(NAMES)}, got {value!r}")
    return names


def _workloads(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    """WORKLOAD: one of WORKLOAD_CHOICES, or several joined by commas (``e1,ceiling,peer``)."""
    names = tuple(dict.fromkeys(v.strip().lower() for v in value.split(",") if v.strip()))
    unknown = [n for n in names if n not in WORKLOAD_CHOICES]
    if not names or unknown or (("all" in names or "soak" in names) and len(names) > 1):
        raise click.BadParameter(
            f"must be one of {', '.join(WORKLOAD_CHOICES)}, or several of them (not all, not soak) joined by"
            f" commas; got {value!r}"
        )
    return names


def _refuse_given(options: dict[str, object], problem: str) -> None:
    """Raise OptionError(``problem``) for the first of ``options`` (name -> value) that was given."""
    for name, value in options.items():
        if value is not None:
            raise OptionError(name, problem)


def _interrupt(signum: int, frame: object) -> NoReturn:  # pragma: no cover - exercised through signals
    raise KeyboardInterrupt


@click.command("bench")
@click.argument("workload", metavar="WORKLOAD[,WORKLOAD...]", callback=_workloads)
@click.option("--quick", is_flag=True, help="Tiny sizes (a smoke test of a minute or two); the peers only if named.")
@click.option(
    "--trials",
    type=click.IntRange(1, 100),
    default=None,
    help="Blocks (fresh databases) per workload (not with soak). Default: 3, or 1 with --quick.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Bundle directory. Default: bench-results/<UTC timestamp>.",
)
@click.option(
    "--dsn",
    "admin_dsn",
    envvar="TASKFORGE_BENCH_DSN",
    show_envvar=True,
    type=Text(),
    default=None,
    help="A server where this user may create databases (one taskforge_bench_<hex> per block, "
    "dropped afterwards). Default: host=127.0.0.1 port=5432 user=postgres dbname=postgres.",
)
@click.option(
    "--workers",
    "worker_counts",
    callback=_worker_counts,
    default=None,
    metavar="1,4,8,16",
    help="Worker process counts for E1/E2/peer and pgbench client counts for the ceiling. "
    "Default: 1,4,8,16, or 1,2 with --quick. soak: one count, default 2.",
)
@click.option(
    "--hold-seconds",
    type=Seconds(1, 3600),
    default=None,
    help="How long longtx runs the worker loop, without and then with a snapshot held elsewhere. "
    "Default: 100, or 3 with --quick. Not with soak.",
)
@click.option(
    "--minutes",
    type=Seconds(0.1, 1440, unit="minutes"),
    default=None,
    help="soak: how long the fixed load runs (0.1 to 1440). Default: 20, or 0.5 with --quick.",
)
@click.option(
    "--hold-snapshot",
    "hold_snapshot",
    type=Seconds(1, 3600),
    default=None,
    metavar="SECONDS",
    help="soak: hold a REPEATABLE READ snapshot this long (1 to 3600), from 40 % into the soak; it must end "
    "before the soak does (less than 0.6 x --minutes x 60). Default: none.",
)
@click.option(
    "--peer/--no-peer",
    "with_peer",
    default=None,
    help="Include the peers in `all` (default: yes, except with --quick).",
)
@click.option(
    "--peers",
    "peer_names",
    callback=_peer_names,
    default=None,
    metavar="NAME,...",
    help="Which peers `peer` runs (graphile-worker, pg-boss, pgqueuer, oban, procrastinate). Default: all.",
)
@click.option(
    "--peer-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where each peer's environment lives (DIR/<peer>: a virtualenv or an npm prefix), created "
    "and reused. Default: OUT/peers.",
)
def bench_command(
    workload: tuple[str, ...],
    quick: bool,
    trials: int | None,
    out_dir: Path | None,
    admin_dsn: str | None,
    worker_counts: tuple[int, ...] | None,
    hold_seconds: float | None,
    minutes: float | None,
    hold_snapshot: float | None,
    with_peer: bool | None,
    peer_names: tuple[str, ...] | None,
    peer_dir: Path | None,
) -> None:
    """Run WORKLOAD (e1, e2, e5, e6, pickup, longtx, async, flow, pooler, ceiling, peer, soak or all;
    several joined by commas, e.g. e1,ceiling,peer, run in that order into one bundle) and write a
    bundle: raw JSON per trial, report.md and charts. `peer` runs E1 too, the figures every peer is
    compared with; `flow` runs E1 on one process with dependency chains, a rate key, concurrency
    keys and ordering keys, each against the plain tasks of the same run; `pooler` runs E1 and E2
    on 10 processes x 100 slots, direct and through a PgBouncer of 20 server connections in
    transaction mode. `soak` (alone) starts a PostgreSQL server of its own with autovacuum on
    (--dsn is not used), measures the peak, then runs workers, a scheduler with retention and a
    submitter at 0.6 x peak for --minutes, optionally holding a snapshot (--hold-snapshot), and
    reports each target met or not met. Trust checks fail the run (exit code 1)."""
    from ..benchmarks import runner
    from ..benchmarks.database import admin_dsn_default

    if workload == ("soak",):
        _refuse_given(
            {
                "--trials": trials,
                "--hold-seconds": hold_seconds,
                "--peer/--no-peer": with_peer,
                "--peers": peer_names,
                "--peer-dir": peer_dir,
            },
            "does not apply to the soak (it runs once, on a server of its own)",
        )
        _soak(quick, out_dir, worker_counts, minutes, hold_snapshot)
        return
    _refuse_given(
        {"--minutes": minutes, "--hold-snapshot": hold_snapshot}, "applies to the soak only (taskforge bench soak)"
    )

    if workload == ("all",):
        include_peer = (not quick) if with_peer is None else with_peer
        selection = [w for w in runner.WORKLOADS if w != "peer" or include_peer]
    else:
        # The peers are divided into E1's figures of the same run; the runner keeps WORKLOADS order.
        selection = list(dict.fromkeys(("e1", *workload) if "peer" in workload else workload))
    dsn = admin_dsn or admin_dsn_default()
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5):
            pass
    except psycopg.OperationalError as exc:
        fail(f"cannot reach the benchmark server ({dsn}): {str(exc).strip().splitlines()[0]}", EXIT_DATABASE)
    sizes = runner.sizes_with(runner.QUICK if quick else runner.FULL, trials, worker_counts, hold_seconds)
    out = out_dir or runner.default_out_dir()
    cfg = runner.BenchConfig(admin_dsn=dsn, out_dir=out, sizes=sizes, quick=quick, peer_dir=peer_dir)
    if peer_names:
        cfg.peer_names = peer_names
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        state = runner.run(selection, cfg)
    except KeyboardInterrupt:
        click.echo(f"taskforge: bench interrupted; partial bundle in {out}", err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo(f"bundle: {out} (report: {out / 'report.md'})")
    if not state.ok:
        failed = [t.label for t in state.trials if not t.ok] + [p.label for p in state.points if not p.ok]
        fail(f"trust checks or trials failed: {', '.join(failed)} (see {out / 'report.md'})", 1)


def _soak(
    quick: bool,
    out_dir: Path | None,
    worker_counts: tuple[int, ...] | None,
    minutes: float | None,
    hold_snapshot: float | None,
) -> None:
    """``taskforge bench soak``: :mod:`taskforge.benchmarks.soak` into OUT (soak.json, report.md,
    charts/soak.png). Exit 1 when the run failed its checks (a target not met is reported, not a
    failure of the run)."""
    import dataclasses

    from ..benchmarks import runner, soak, soak_report
    from ..private_server import find_bindir

    sizes = soak.QUICK if quick else soak.FULL
    if worker_counts:
        if len(worker_counts) > 1:
            raise OptionError("--workers", "the soak runs one worker count: give one number")
        sizes = dataclasses.replace(sizes, workers=worker_counts[0])
    minutes = minutes if minutes is not None else (0.5 if quick else 20.0)
    longest = soak.longest_hold_seconds(minutes, sizes)
    if hold_snapshot is not None and hold_snapshot >= longest:
        raise OptionError(
            "--hold-snapshot",
            f"must end before the soak does: less than {longest:g} s for a soak of {minutes:g} min "
            f"(the hold starts at {sizes.hold_start_fraction:g} of the run), got {hold_snapshot:g}",
        )
    try:
        find_bindir()
    except RuntimeError as exc:
        fail(f"bench soak: {exc}", EXIT_DATABASE)
    out = out_dir or runner.default_out_dir()
    cfg = soak.SoakConfig(minutes=minutes, out_dir=out, hold_snapshot_seconds=hold_snapshot, sizes=sizes, quick=quick)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        run = soak.run_soak(cfg)
    except KeyboardInterrupt:
        click.echo("taskforge: bench soak interrupted (server and processes stopped)", err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    figures = soak_report.write_bundle(run, out)
    for name, verdict in figures["targets"].items():
        click.echo(f"{name}: {verdict['verdict']}: {verdict['detail']}")
    click.echo(f"bundle: {out} (report: {out / 'report.md'})")
    if not run.ok:
        failed = [c.name for c in run.checks if not c.ok]
        fail(f"the soak failed: {run.error or ', '.join(failed)} (see {out / 'report.md'})", 1)


COMMANDS: tuple[click.Command, ...] = (bench_command,)
