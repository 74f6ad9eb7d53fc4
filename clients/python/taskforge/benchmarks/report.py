"""The bundle a run leaves in ``--out DIR``:

* ``environment.json``           machine, PostgreSQL version and settings, git commit, packages, and
                                 the peers' exact versions and runtimes (Python, Node.js, npm)
* ``trials/<label>.json``        one raw record per trial (result, metrics, checks, options, environment)
* ``ceiling/<label>.json``       one raw record per pgbench point (with pgbench's output tail)
* ``summary.json``               the report's numbers (see :mod:`.summary`)
* ``report.md``                  tables beside the original's published figures, the flow
                                 variants against e1-plain, the ceilings and their ratios,
                                 every peer against TaskForge, memory per process,
                                 trust checks, the targets, charts
* ``charts/*.png``               see :mod:`.charts`
* ``logs/<label>/*.log``         every worker, scheduler and peer process's output
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .results import CeilingPoint, TrialResult
from .sections import (
    ceiling_section,
    cpu_section,
    flow_section,
    memory_section,
    number as _n,
    peers_section,
    pooler_section,
    table as _table,
    targets_section,
    times as _x,
    writes_section,
)
from .summary import ORIGINAL

__all__ = ["Bundle", "render_markdown"]


class Bundle:
    """Writes the bundle's files under ``out_dir`` as results arrive."""

    def __init__(self, out_dir: Path, environment: dict[str, Any]):
        self.out_dir = Path(out_dir)
        self.environment = environment
        for sub in ("trials", "ceiling", "logs"):
            (self.out_dir / sub).mkdir(parents=True, exist_ok=True)
        self._write(self.out_dir / "environment.json", environment)

    def add_environment(self, key: str, value: Any) -> None:
        """Add ``key`` to the environment (what a run learns after it starts, e.g. the peers'
        versions) and rewrite environment.json; records written afterwards carry it too."""
        self.environment[key] = value
        self._write(self.out_dir / "environment.json", self.environment)

    @property
    def log_dir(self) -> Path:
        return self.out_dir / "logs"

    @staticmethod
    def _write(path: Path, data: Any) -> Path:
        path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        return path

    def trial(self, result: TrialResult) -> Path:
        """Write one trial's raw record (with the environment)."""
        return self._write(
            self.out_dir / "trials" / f"{result.label}.json", {"trial": asdict(result), "environment": self.environment}
        )

    def ceiling(self, point: CeilingPoint) -> Path:
        """Write one pgbench point's raw record (with the environment)."""
        return self._write(
            self.out_dir / "ceiling" / f"{point.label}.json", {"point": asdict(point), "environment": self.environment}
        )

    def finish(self, summary: dict[str, Any], markdown: str) -> tuple[Path, Path]:
        """Write ``summary.json`` and ``report.md``."""
        report = self.out_dir / "report.md"
        report.write_text(markdown, encoding="utf-8")
        return self._write(self.out_dir / "summary.json", summary), report


def _environment(env: dict[str, Any]) -> list[str]:
    cpu, pg = env["cpu"], env["postgresql"]
    git = env.get("git") or {}
    settings = ", ".join(f"{k}={v}" for k, v in pg["settings"].items())
    return [
        f"- machine: {cpu['model']}, {cpu['logical_cpus']} logical CPUs ({cpu['usable_cpus']} usable), "
        f"{(env.get('memory_bytes') or 0) / 2**30:.0f} GiB; {env['platform']}",
        f"- PostgreSQL: {pg['version'].split(' on ')[0]}; {settings}",
        f"- code: {git.get('commit', 'not a git checkout')}{' (with local changes)' if git.get('dirty') else ''}; "
        + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v)
        + f"; Python {env['python']}",
        f"- collected at {env['collected_at']}",
    ]


def _scaling_section(title: str, rows: list[dict[str, Any]], cpus: int, with_ideal: bool) -> list[str]:
    if not rows:
        return []
    header = ["workers", "median tasks/s", "trials", "speedup vs 1", "efficiency"]
    header += ["% of ideal"] if with_ideal else []
    header += ["original (published)"]
    body = []
    for r in rows:
        line = [str(r["workers"]), _n(r["median"]), str(r["trials"]), _x(r["speedup"]), _n(r["efficiency"], 2)]
        line += [_n(r.get("percent_of_ideal")) + " %"] if with_ideal else []
        line += [_n(r.get("original"))]
        body.append(line)
    out = [f"## {title}", "", *_table(header, body), ""]
    above = [r["workers"] for r in rows if r["workers"] > cpus]
    out += [
        f"This machine has {cpus} CPU cores, shared by the worker processes and PostgreSQL itself. "
        + (
            f"The rows at {', '.join(map(str, above))} workers run more processes than cores: they show the "
            "plateau, not scaling."
            if above
            else f"Counts above {cpus} would run more processes than cores and show the plateau, not scaling."
        ),
        "",
    ]
    return out


def render_markdown(
    summary: dict[str, Any],
    environment: dict[str, Any],
    trials: Sequence[TrialResult],
    points: Sequence[CeilingPoint],
    charts: Sequence[Path],
    title: str,
    notes: Sequence[str],
) -> str:
    """The human report (GitHub-flavoured markdown)."""
    cpus = environment["cpu"]["usable_cpus"] or 1
    out = [f"# {title}", "", *_environment(environment), ""]
    out += [
        f"Original's published figures: {ORIGINAL['machine']}. Every figure here is the median of the trials "
        "that passed their trust checks; durations come from database timestamps.",
        "",
    ]
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out += _scaling_section("E1: no-op tasks", summary["e1"], cpus, with_ideal=False)
    if summary["e1_batched"]:
        r = summary["e1_batched"][0]
        out += [
            f"E1 batched (1 process, `--concurrency {r['concurrency']}`, {r['tasks']:,} tasks): "
            f"{_n(r['median'])} tasks/s (median of {r['trials']}).",
            "",
        ]
    if summary.get("e1_prefetch"):
        r = summary["e1_prefetch"][0]
        out += [
            f"E1 with `--prefetch 1` (1 process, one slot, {r['tasks']:,} tasks): {_n(r['median'])} tasks/s "
            f"(median of {r['trials']}): the next task is claimed while one runs.",
            "",
        ]
    out += _scaling_section("E2: 50 ms sleeps", summary["e2"], cpus, with_ideal=True)
    if summary.get("e2_prefetch"):
        out += _scaling_section(
            "E2 with `--prefetch 1`: the next task claimed while one runs",
            summary["e2_prefetch"],
            cpus,
            with_ideal=True,
        )
    e5, e6, pickup = summary["e5"], summary["e6"], summary["pickup"]
    if e5["trials"]:
        out += [
            "## E5: fail-once tasks, fixed 100 ms retry delay",
            "",
            f"{_n(e5['median'])} tasks/s (median of {e5['trials']} trials, {e5['workers']} workers); every "
            "history is exactly FAILED → SUCCEEDED (trust check `histories`).",
            "",
        ]
    if e6["trials"]:
        out += [
            "## E6: crash recovery (SIGKILL of lease owners)",
            "",
            *_table(
                ["measure", "TaskForge", "original (published)"],
                [
                    ["recovery lag p50 (ms)", _n(e6["recovery_lag_p50_ms"]), "–"],
                    ["recovery lag p95 (ms)", _n(e6["recovery_lag_p95_ms"]), _n(ORIGINAL["e6_recovery_lag_p95_ms"])],
                    ["recovery lag max (ms)", _n(e6["recovery_lag_max_ms"]), "–"],
                    [
                        "kill-to-final-drain (s)",
                        _n(e6["kill_to_drain_seconds"]),
                        _n(ORIGINAL["e6_kill_to_drain_seconds"]),
                    ],
                    ["throughput (tasks/s)", _n(e6["median"]), "–"],
                    ["abandoned attempts (all trials)", str(e6["abandoned_attempts"]), "–"],
                ],
            ),
            "",
            "Recovery lag = attempt finished_at − lease_expires_at of ABANDONED attempts, pooled over trials.",
            "",
        ]
    if pickup["samples"]:
        out += [
            "## Pickup latency (NOTIFY path)",
            "",
            f"One idle worker, tasks submitted one at a time: median {_n(pickup['p50_ms'])} ms, p95 "
            f"{_n(pickup['p95_ms'])} ms, max {_n(pickup['max_ms'])} ms over {pickup['samples']} tasks "
            "(first attempt started_at − task created_at).",
            "",
        ]
    free, held = summary["longtx"]["free"], summary["longtx"]["held"]
    if free["trials"] or held["trials"]:
        out += [
            "## Long transactions: a snapshot held elsewhere",
            "",
            *_table(
                ["snapshot held", "cycles/s", "claim p50 (ms)", "claim p95 (ms)", "claim max (ms)", "xmin age at end"],
                [
                    [
                        label,
                        _n(r["cycles_per_second"]),
                        _n(r["claim_p50_ms"], 2),
                        _n(r["claim_p95_ms"], 2),
                        _n(r["claim_max_ms"], 2),
                        _n(r["xmin_age_at_end"], 0),
                    ]
                    for label, r in (("no", free), ("yes", held))
                    if r["trials"]
                ],
            ),
            "",
            f"The worker's loop (tf_submit, tf_claim, tf_finalize, one cycle at a time) for "
            f"{_n(free['seconds'] or held['seconds'], 0)} s on a fresh database, alone and while another session "
            "holds a REPEATABLE READ snapshot; claim = client round trip of tf_claim. Medians of trials.",
            "",
        ]
    if summary.get("async"):
        out += [
            "## Async handlers: async_sleep on one process",
            "",
            *_table(
                [
                    "tasks",
                    "--concurrency",
                    "sleep (ms)",
                    "median tasks/s",
                    "ideal",
                    "% of ideal",
                    "span (s)",
                    "peak RSS (MiB)",
                ],
                [
                    [
                        str(r["tasks"]),
                        str(r["concurrency"]),
                        str(r["sleep_ms"]),
                        _n(r["median"]),
                        _n(r["ideal"], 0),
                        _n(r["percent_of_ideal"]) + " %",
                        _n(r["span_seconds"], 2),
                        _n(r["rss_mib"]),
                    ]
                    for r in summary["async"]
                ],
            ),
            "",
            "One `taskforge worker` process runs every task's `await ctx.async_sleep` on its event loop; "
            "ideal = concurrency / sleep. Peak RSS: the worker process's VmHWM.",
            "",
        ]
    out += flow_section(summary)
    out += pooler_section(summary)
    batch = summary["e1_batched"][0]["concurrency"] if summary["e1_batched"] else None
    out += ceiling_section(summary, batch or _batch_of(points))
    out += peers_section(summary, batch)
    out += memory_section(summary)
    out += writes_section(summary)
    out += cpu_section(summary, cpus)
    out += ["## Trust checks", ""]
    failed = [t for t in trials if not t.ok] + [p for p in points if not p.ok]
    if not failed:
        completed = f"; all {len(points)} pgbench points completed" if points else ""
        out += [f"All {len(trials)} trials passed every trust check{completed}.", ""]
    for item in failed:
        if isinstance(item, TrialResult):
            problems = [item.error] if item.error else [f"{c.name}: {c.detail}" for c in item.failed_checks()]
        else:
            problems = [item.error or "failed"]
        out.append(f"- **{item.label}** FAILED: " + "; ".join(p.splitlines()[0] for p in problems if p))
    out += [""] if failed else []
    out += targets_section(summary)
    if charts:
        out += ["## Charts", "", *(f"![{p.stem}](charts/{p.name})" for p in charts), ""]
    return "\n".join(out)


def _batch_of(points: Sequence[CeilingPoint]) -> int | None:
    """B of the batched ceiling points (None when none ran)."""
    return next((p.batch for p in points if p.batch), None)
