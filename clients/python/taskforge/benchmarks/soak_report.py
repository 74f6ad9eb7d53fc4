"""The soak's figures, a verdict per target, ``report.md`` and the chart (:mod:`.soak` measures).

Everything here reads the run's JSON form (``soak.json``), so a bundle can be re-read without
running again. Times are seconds since the soak started (the harness's monotonic clock; a
sample's throughput belongs to ``FINISH_LAG_SECONDS`` before the sample, the database instant it
counted up to); latencies are ms; sizes bytes (MiB in the report).

Targets (issue 17, item 7), each ``met``, ``not met`` or ``not measured`` with its numbers:

* **throughput**: the last window's tasks/s >= 90 % of the first window's (windows of
  ``window_seconds``, 5 minutes, or a quarter of a shorter run, in whole buckets);
* **claim p99**: every later bucket's p99 <= 2 x the first bucket's, outside the snapshot hold
  and the minute after it (which the hold targets judge); the worst ratio inside is reported too;

A target whose figures would compare a bucket with itself (a run shorter than two windows, no
later bucket outside the hold) is ``not measured``, never ``met``.
* **sizes**: tasks + attempts (tables and indexes) grow <= 5 % over the last window, i.e. they
  stopped growing once retention runs;
* **hold, claim p50**: the highest p50 of any 10 s of the hold <= 2 x the p50 of the minute
  before it;
* **hold, recovery**: throughput (tasks/s over 10 s) is back at >= 90 % of the minute before
  the hold within 60 s of the release.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import stats
from .soak import FINISH_LAG_SECONDS, SoakRun

__all__ = ["analyse", "draw_chart", "render_markdown", "write_bundle"]

#: The tables whose sizes and dead tuples the report follows.
TABLES = ("tasks", "attempts")
#: Width of the fine windows of the hold targets (s) and how long "before the hold" is (s).
FINE_SECONDS = 10.0
BEFORE_SECONDS = 60.0
RECOVERY_LIMIT_SECONDS = 60.0
MIB = 1024.0 * 1024.0


def _rate(samples: Sequence[dict[str, Any]]) -> float | None:
    seconds = sum(s["interval_seconds"] for s in samples)
    return sum(s["finished"] for s in samples) / seconds if seconds > 0 else None


def _finish_at(sample: dict[str, Any]) -> float:
    """The instant a sample's throughput count runs up to (seconds since the start)."""
    return float(sample["at"]) - FINISH_LAG_SECONDS


def _total_bytes(sample: dict[str, Any]) -> int:
    return sum(
        sample["tables"].get(t, {}).get("table_bytes", 0) + sample["tables"].get(t, {}).get("index_bytes", 0)
        for t in TABLES
    )


def _reads_per_claim(first: dict[str, Any], last: dict[str, Any]) -> float | None:
    """Index entries of taskforge.tasks read per attempt created (a claim that got a task)."""
    claims = last["tables"].get("attempts", {}).get("inserted", 0) - first["tables"].get("attempts", {}).get(
        "inserted", 0
    )
    reads = last["task_index_reads"] - first["task_index_reads"]
    return reads / claims if claims > 0 else None


def _within(samples: Sequence[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    return [s for s in samples if start <= s["at"] < end]


def _p(values: Sequence[float], q: float) -> float | None:
    return stats.percentile(values, q)


def _verdict(met: bool | None, text: str) -> dict[str, Any]:
    return {"verdict": "not measured" if met is None else ("met" if met else "not met"), "detail": text}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def analyse(data: dict[str, Any]) -> dict[str, Any]:
    """Figures and verdicts from ``soak.json``'s content (:meth:`.SoakRun.to_json`)."""
    sizes = data["config"]["sizes"]
    width = float(sizes["bucket_seconds"])
    samples: list[dict[str, Any]] = data["samples"]
    probes: list[list[Any]] = data["probes"]
    # The planned length: the last sample and probe, a moment past it, count in the last bucket.
    duration = float(data["config"]["minutes"]) * 60.0
    count = max(1, math.ceil(duration / width - 1e-6))
    buckets = []
    previous: dict[str, Any] | None = samples[0] if samples else None
    for k in range(count):
        lo, hi = k * width, (k + 1) * width
        inside = [s for s in samples if lo <= _finish_at(s) < hi or (k == count - 1 and _finish_at(s) >= hi)]
        claims = [ms for at, ms, _ in probes if lo <= at < hi or (k == count - 1 and at >= hi)]
        last = inside[-1] if inside else None
        row: dict[str, Any] = {
            "start_seconds": lo,
            "tasks_per_second": _rate(inside),
            "claims": len(claims),
            "claim_p50_ms": _p(claims, 50),
            "claim_p99_ms": _p(claims, 99),
        }
        if last is not None:
            row.update(
                {
                    "dead_tuples": {t: last["tables"].get(t, {}).get("dead") for t in TABLES},
                    "table_bytes": {t: last["tables"].get(t, {}).get("table_bytes") for t in TABLES},
                    "index_bytes": {t: last["tables"].get(t, {}).get("index_bytes") for t in TABLES},
                    "xmin_age_max": max(s["xmin_age"] for s in inside),
                    "backlog_max": max(s["backlog"] for s in inside),
                    "index_reads_per_claim": _reads_per_claim(previous, last) if previous is not None else None,
                }
            )
            previous = last
        buckets.append(row)
    figures: dict[str, Any] = {
        "bucket_seconds": width,
        "buckets": buckets,
        "peak_tasks_per_second": data["peak"].get("tasks_per_second"),
        "offered_per_second": data["offered_per_second"],
        "soak_seconds": duration,
    }
    full = [b for b in buckets if b["start_seconds"] + width <= duration + 1e-6] or buckets
    window = max(1, min(round(float(sizes["window_seconds"]) / width), len(full) // 4))
    figures["window_buckets"] = window
    hold = data.get("hold")
    quiet_from = quiet_to = math.inf
    if hold and hold.get("released_at") is not None:
        quiet_from, quiet_to = hold["started_at"], hold["released_at"] + RECOVERY_LIMIT_SECONDS
    targets: dict[str, dict[str, Any]] = {}

    if len(full) < 2 * window:
        # the first and the last window would share buckets: a run compared with itself
        targets["throughput"] = _verdict(
            None, f"{len(full)} whole bucket(s) of {width:g} s: too short for a first and a last window"
        )
    else:
        first = _mean([b["tasks_per_second"] for b in full[:window]])
        final = _mean([b["tasks_per_second"] for b in full[-window:]])
        ratio = stats.ratio(final, first)
        targets["throughput"] = _verdict(
            None if ratio is None else ratio >= 0.9,
            f"last {window} bucket(s) {_fmt(final, 1)} tasks/s, first {window} {_fmt(first, 1)} tasks/s: "
            f"{_fmt(ratio)} (target >= 0.90)",
        )

    base = buckets[0]["claim_p99_ms"]
    later = buckets[1:]  # the first bucket is the reference, never judged against itself
    outside = [
        b["claim_p99_ms"] / base
        for b in later
        if base and b["claim_p99_ms"] is not None and not _overlaps(b["start_seconds"], width, quiet_from, quiet_to)
    ]
    inside_hold = [
        b["claim_p99_ms"] / base
        for b in later
        if base and b["claim_p99_ms"] is not None and _overlaps(b["start_seconds"], width, quiet_from, quiet_to)
    ]
    worst = max(outside) if outside else None
    targets["claim_p99"] = _verdict(
        None if worst is None else worst <= 2.0,
        f"first bucket p99 {_fmt(base)} ms; worst later bucket outside the hold and the minute after it "
        f"{_fmt(worst)} x (target <= 2)"
        + (f"; worst inside {_fmt(max(inside_hold))} x" if inside_hold else "")
        + ("" if outside else "; no later bucket to judge"),
    )

    growth = None
    if samples:
        end = samples[-1]
        start_at = full[-window]["start_seconds"] if len(full) >= window else 0.0
        before = [s for s in samples if _finish_at(s) <= start_at] or samples[:1]
        size_start, size_end = _total_bytes(before[-1]), _total_bytes(end)
        growth = (size_end - size_start) / size_start if size_start else None
        figures["sizes"] = {
            "at_last_window_start_bytes": size_start,
            "at_end_bytes": size_end,
            "max_bytes": max(_total_bytes(s) for s in samples),
        }
        targets["sizes"] = _verdict(
            None if growth is None else growth <= 0.05,
            f"tasks + attempts with indexes {size_start / MIB:,.1f} MiB at the last window's start, "
            f"{size_end / MIB:,.1f} MiB at the end: {growth:+.1%} (target <= +5 %); "
            f"largest {figures['sizes']['max_bytes'] / MIB:,.1f} MiB"
            if growth is not None
            else "no sizes",
        )
    if hold and hold.get("released_at") is not None:
        figures["hold"], targets["hold_claim_p50"], targets["hold_recovery"] = _hold(hold, samples, probes)
    else:
        why = "the snapshot was still held when the soak ended" if hold else "no snapshot held (--hold-snapshot)"
        targets["hold_claim_p50"] = _verdict(None, why)
        targets["hold_recovery"] = _verdict(None, why)
    figures["targets"] = targets
    return figures


def _hold(
    hold: dict[str, Any], samples: list[dict[str, Any]], probes: list[list[Any]]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    start, release = float(hold["started_at"]), float(hold["released_at"])
    before_from = max(0.0, start - BEFORE_SECONDS)
    before = [ms for at, ms, _ in probes if before_from <= at < start]
    during = [ms for at, ms, _ in probes if start <= at < release]
    fine = []
    t = start
    while t < release:
        window = [ms for at, ms, _ in probes if t <= at < min(t + FINE_SECONDS, release)]
        if window:
            fine.append((t, _p(window, 50)))
        t += FINE_SECONDS
    p50_before = _p(before, 50)
    worst_at, worst = max(fine, key=lambda f: f[1] or 0.0) if fine else (None, None)
    ratio = stats.ratio(worst, p50_before)
    rate_before = _rate([s for s in samples if before_from <= _finish_at(s) < start])
    held_samples = [s for s in samples if start <= _finish_at(s) < release]
    rate_during = _rate(held_samples)
    back_after = None
    for i, s in enumerate(samples):
        t_end = _finish_at(s)
        if t_end < release + FINE_SECONDS or rate_before is None:
            continue
        window_samples = [x for x in samples[: i + 1] if t_end - FINE_SECONDS < _finish_at(x) <= t_end]
        rate = _rate(window_samples)
        if rate is not None and rate >= 0.9 * rate_before:
            back_after = t_end - release
            break
    # the backlog the hold left: when it is back at the most the minute before the hold saw
    usual = max((s["backlog"] for s in _within(samples, before_from, start)), default=0)
    cleared = next((s["at"] - release for s in samples if s["at"] >= release and s["backlog"] <= usual), None)
    near_release = [s for s in samples if s["at"] <= release]
    ahead = _within(samples, before_from, start)
    reads_before = _reads_per_claim(ahead[0], ahead[-1]) if len(ahead) > 1 else None
    late = [s for s in held_samples if s["at"] >= release - 2 * FINE_SECONDS]
    reads_late = _reads_per_claim(late[0], late[-1]) if len(late) > 1 else None
    figures: dict[str, Any] = {
        "started_at": start,
        "released_at": release,
        "xmin_age_at_release": hold.get("xmin_age_at_release"),
        "claim_p50_before_ms": p50_before,
        "claim_p50_during_ms": _p(during, 50),
        "claim_p50_worst_10s_ms": worst,
        "claim_p50_worst_10s_at": worst_at,
        "claim_p50_by_10s_ms": fine,
        "tasks_per_second_before": rate_before,
        "tasks_per_second_during": rate_during,
        "back_after_release_seconds": back_after,
        "dead_tuples_at_release": near_release[-1]["tables"].get("tasks", {}).get("dead") if near_release else None,
        "index_reads_per_claim_before": reads_before,
        "index_reads_per_claim_late_in_hold": reads_late,
        "backlog_max_during": max((s["backlog"] for s in held_samples), default=None),
        "backlog_max_before": usual,
        "backlog_cleared_after_release_seconds": cleared,
    }
    p50 = _verdict(
        None if ratio is None else ratio <= 2.0,
        f"p50 {_fmt(p50_before)} ms in the minute before; worst 10 s of the hold {_fmt(worst)} ms: "
        f"{_fmt(ratio)} x (target <= 2); whole hold {_fmt(figures['claim_p50_during_ms'])} ms; index entries "
        f"of tasks read per claimed task {_fmt(reads_before, 1)} before, {_fmt(reads_late, 1)} in the hold's "
        f"last {2 * FINE_SECONDS:g} s",
    )
    recovery = _verdict(
        None if rate_before is None else (back_after is not None and back_after <= RECOVERY_LIMIT_SECONDS),
        f"{_fmt(rate_before, 1)} tasks/s in the minute before, {_fmt(rate_during, 1)} during the hold; "
        + (
            f"back at >= 90 % {back_after:.0f} s after the release (target <= 60 s)"
            if back_after is not None
            else "not back at >= 90 % before the end"
        )
        + f"; backlog {figures['backlog_max_during']} at most, back under {usual} "
        + (f"{cleared:.0f} s after the release" if cleared is not None else "not before the end"),
    )
    return figures, p50, recovery


def _overlaps(lo: float, width: float, start: float, end: float) -> bool:
    return lo < end and lo + width > start


def _mean(values: Sequence[float | None]) -> float | None:
    data = [v for v in values if v is not None]
    return sum(data) / len(data) if data else None


def render_markdown(data: dict[str, Any], figures: dict[str, Any], charts: Sequence[Path]) -> str:
    """The report: settings, the targets' verdicts, the per-bucket table, the hold, the checks."""
    env = data["environment"]
    pg = env.get("postgresql", {})
    settings = ", ".join(f"{k}={v}" for k, v in sorted(pg.get("settings", {}).items()))
    cfg = data["config"]
    sizes = cfg["sizes"]
    width = figures["bucket_seconds"]
    lines = [
        f"# TaskForge soak: {cfg['minutes']:g} minutes"
        + (f", a snapshot held {cfg['hold_snapshot_seconds']:g} s" if cfg["hold_snapshot_seconds"] else "")
        + (" (quick)" if cfg["quick"] else ""),
        "",
        f"- server: a private {pg.get('version', '?')}; {settings}",
        f"- code: {(env.get('git') or {}).get('commit', '?')}; machine: {env.get('cpu', {}).get('model')} "
        f"x{env.get('cpu', {}).get('logical_cpus')}; collected {env.get('collected_at')}",
        f"- {sizes['workers']} worker process(es) at --concurrency 1, one scheduler with --retain-seconds "
        f"{sizes['retain_seconds']:g} (pruning every {sizes['prune_interval_seconds']:g} s); peak "
        f"{_fmt(figures['peak_tasks_per_second'], 1)} tasks/s ({data['peak'].get('tasks')} tasks); offered "
        f"{_fmt(figures['offered_per_second'], 1)} tasks/s ({sizes['fraction']:g} x peak: a submitter process at "
        f"{_fmt(data['submit_per_second'], 1)} and the claim probe at {sizes['probe_per_second']:g} cycles/s)",
        f"- run {'passed' if data['ok'] else 'FAILED'} its checks"
        + (f"; error: {data['error']}" if data.get("error") else ""),
        "",
        "## Against the targets",
        "",
        "| target | verdict | measured |",
        "|---|---|---|",
    ]
    names = {
        "throughput": "last window >= 90 % of the first",
        "claim_p99": "claim p99 <= 2 x the first bucket's",
        "sizes": "sizes stop growing once retention runs",
        "hold_claim_p50": "snapshot held: claim p50 <= 2 x before",
        "hold_recovery": "snapshot held: throughput back within 60 s of the release",
    }
    for key, verdict in figures["targets"].items():
        lines.append(f"| {names.get(key, key)} | **{verdict['verdict']}** | {verdict['detail']} |")
    lines += [
        "",
        f"## Per {width:g} s",
        "",
        "| from (s) | tasks/s | claim p50 (ms) | claim p99 (ms) | dead tuples tasks / attempts | "
        "tasks table + index (MiB) | attempts table + index (MiB) | oldest xmin age | backlog | "
        "index entries per claim |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in figures["buckets"]:
        dead = b.get("dead_tuples") or {}
        tb, ib = b.get("table_bytes") or {}, b.get("index_bytes") or {}

        def mib(t: str, tb: dict[str, Any] = tb, ib: dict[str, Any] = ib) -> str:
            return "–" if tb.get(t) is None else f"{tb[t] / MIB:,.1f} + {ib[t] / MIB:,.1f}"

        lines.append(
            f"| {b['start_seconds']:g} | {_fmt(b['tasks_per_second'], 1)} | {_fmt(b['claim_p50_ms'])} | "
            f"{_fmt(b['claim_p99_ms'])} | {dead.get('tasks', '–')} / {dead.get('attempts', '–')} | {mib('tasks')} | "
            f"{mib('attempts')} | {b.get('xmin_age_max', '–')} | {b.get('backlog_max', '–')} | "
            f"{_fmt(b.get('index_reads_per_claim'), 1)} |"
        )
    hold = figures.get("hold")
    if hold:
        lines += [
            "",
            "## The snapshot hold",
            "",
            f"Held from {hold['started_at']:.0f} s to {hold['released_at']:.0f} s (xmin age at release "
            f"{hold['xmin_age_at_release']}; dead tuples of tasks {hold['dead_tuples_at_release']}). Claim p50 "
            f"{_fmt(hold['claim_p50_before_ms'])} ms in the minute before, {_fmt(hold['claim_p50_during_ms'])} ms "
            f"over the hold, {_fmt(hold['claim_p50_worst_10s_ms'])} ms in its worst 10 s; throughput "
            f"{_fmt(hold['tasks_per_second_before'], 1)} tasks/s before, {_fmt(hold['tasks_per_second_during'], 1)} "
            f"during (backlog up to {hold['backlog_max_during']}, back under the minute before's "
            f"{hold['backlog_max_before']} {_fmt(hold['backlog_cleared_after_release_seconds'], 0)} s after the "
            f"release). Index entries of `taskforge.tasks` read per "
            f"claimed task (`pg_stat_user_indexes.idx_tup_read` / attempts inserted): "
            f"{_fmt(hold['index_reads_per_claim_before'], 1)} before, "
            f"{_fmt(hold['index_reads_per_claim_late_in_hold'], 1)} late in the hold.",
        ]
    lines += ["", "## Checks", ""]
    lines += [f"- {'ok' if c['ok'] else 'FAILED'}: {c['name']}: {c['detail']}" for c in data["checks"]]
    if charts:
        lines += ["", "## Charts", ""] + [f"![{p.stem}](charts/{p.name})" for p in charts]
    return "\n".join(lines) + "\n"


def draw_chart(data: dict[str, Any], figures: dict[str, Any], path: Path) -> Path | None:
    """Six panels over the soak's time: throughput, claim latency, dead tuples, oldest xmin age
    and backlog, sizes, index entries read per claimed task; the snapshot hold shaded."""
    samples = data["samples"]
    if not samples:
        return None
    from .charts import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(3, 2, figsize=(12, 10.5), sharex=True)
    minutes = [(s["at"]) / 60.0 for s in samples]
    finish_minutes = [_finish_at(s) / 60.0 for s in samples]
    width = figures["bucket_seconds"]
    mids = [(b["start_seconds"] + width / 2) / 60.0 for b in figures["buckets"]]

    ax = axes[0][0]
    ax.plot(
        finish_minutes,
        [s["finished"] / s["interval_seconds"] if s["interval_seconds"] > 0 else None for s in samples],
        color="C0",
        alpha=0.35,
        linewidth=0.8,
        label="per sample",
    )
    ax.plot(mids, [b["tasks_per_second"] for b in figures["buckets"]], "o-", color="C0", label=f"per {width:g} s")
    ax.axhline(figures["offered_per_second"], color="grey", linestyle="--", linewidth=0.8, label="offered")
    ax.set_title("Throughput (tasks finished / s)")
    ax.set_ylim(bottom=0)

    ax = axes[0][1]
    probes = data["probes"]
    fine = 10.0
    groups: dict[int, list[float]] = {}
    for at, ms, _ in probes:
        groups.setdefault(int(at // fine), []).append(ms)
    keys = sorted(groups)
    ax.plot(
        [(k + 0.5) * fine / 60.0 for k in keys],
        [_p(groups[k], 50) for k in keys],
        color="C1",
        alpha=0.4,
        linewidth=0.8,
        label="p50 per 10 s",
    )
    ax.plot(mids, [b["claim_p50_ms"] for b in figures["buckets"]], "o-", color="C1", label=f"p50 per {width:g} s")
    ax.plot(mids, [b["claim_p99_ms"] for b in figures["buckets"]], "s-", color="C3", label=f"p99 per {width:g} s")
    ax.set_yscale("log")
    ax.set_title("Claim latency (probe's tf_claim round trip, ms)")

    ax = axes[1][0]
    for t in TABLES:
        ax.plot(minutes, [s["tables"].get(t, {}).get("dead", 0) for s in samples], label=t)
    ax.set_title("Dead tuples (pg_stat_user_tables.n_dead_tup)")
    ax.set_ylim(bottom=0)

    ax = axes[1][1]
    ax.plot(minutes, [s["xmin_age"] for s in samples], color="C4", label="oldest xmin age")
    ax.set_title("Oldest snapshot's xmin age (transactions) and backlog")
    ax.set_ylim(bottom=0)
    twin = ax.twinx()
    twin.plot(minutes, [s["backlog"] for s in samples], color="C5", alpha=0.6, label="QUEUED tasks (right)")
    twin.set_ylim(bottom=0)
    twin.legend(fontsize=8, loc="upper right")

    ax = axes[2][0]
    for i, t in enumerate(TABLES):
        ax.plot(minutes, [s["tables"].get(t, {}).get("table_bytes", 0) / MIB for s in samples], f"C{i}-", label=t)
        ax.plot(
            minutes,
            [s["tables"].get(t, {}).get("index_bytes", 0) / MIB for s in samples],
            f"C{i}--",
            label=f"{t} indexes",
        )
    ax.set_title("Sizes (MiB)")
    ax.set_ylim(bottom=0)

    ax = axes[2][1]
    per_claim = [None] + [_reads_per_claim(a, b) for a, b in itertools.pairwise(samples)]
    ax.plot(minutes, per_claim, color="C2", label="entries read / claimed task")
    ax.set_yscale("log")
    ax.set_title("Index entries of tasks read per claimed task")

    hold = figures.get("hold")
    for row in axes:
        for ax in row:
            if hold:
                ax.axvspan(hold["started_at"] / 60.0, hold["released_at"] / 60.0, color="orange", alpha=0.15)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
    for ax in axes[2]:
        ax.set_xlabel("minutes since the soak started" + (" (shaded: snapshot held)" if hold else ""))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_bundle(run: SoakRun, out_dir: Path) -> dict[str, Any]:
    """``OUT/soak.json`` (the run, with the figures under ``figures``), ``OUT/report.md`` and
    ``OUT/charts/soak.png``; returns the figures."""
    data = json.loads(json.dumps(run.to_json(), default=str))
    figures = analyse(data)
    data["figures"] = figures
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "soak.json").write_text(json.dumps(data, indent=1) + "\n")
    chart = draw_chart(data, figures, out_dir / "charts" / "soak.png")
    (out_dir / "report.md").write_text(render_markdown(data, figures, [chart] if chart else []))
    return figures
