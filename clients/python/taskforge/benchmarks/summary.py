"""From raw trials and ceiling points to the numbers the report shows (medians of trials).

Every figure is a median over the trials that passed their trust checks; failed trials are
listed, never averaged in. Units: tasks (or jobs, cycles) per second, milliseconds, seconds.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Any

from . import stats
from .results import CeilingPoint, TrialResult

__all__ = ["ORIGINAL", "summarize"]

#: Published figures of the original (Go workers, Apple M4 Pro, 12 logical CPUs, local Docker).
ORIGINAL: dict[str, Any] = {
    "machine": "Go workers on a 12-CPU Apple M4 Pro (local Docker)",
    "e1": {1: 779.7, 4: 1284.0, 8: 1279.6, 16: 1214.4},
    "e2": {1: 18.76, 4: 74.67, 8: 149.44, 16: 297.26},
    "e6_recovery_lag_p95_ms": 36.7,
    "e6_kill_to_drain_seconds": 25.3,
}


def _by_workers(trials: Iterable[TrialResult], workload: str) -> dict[int, list[TrialResult]]:
    grouped: dict[int, list[TrialResult]] = collections.defaultdict(list)
    for t in trials:
        if t.workload == workload and t.ok:
            grouped[t.workers].append(t)
    return dict(sorted(grouped.items()))


def _scaling(
    trials: Sequence[TrialResult],
    workload: str,
    ideal_task_seconds: float | None = None,
    original: dict[int, float] | None = None,
) -> list[dict[str, Any]]:
    grouped = _by_workers(trials, workload)
    base = stats.median(t.throughput for t in grouped.get(1, []))
    rows = []
    for workers, group in grouped.items():
        measured = [t.throughput for t in group if t.throughput is not None]
        med = stats.median(measured)
        sp = stats.speedup(med, base)
        row = {
            "workers": workers,
            "trials": len(group),
            "median": med,
            "min": min(measured, default=None),
            "max": max(measured, default=None),
            "speedup": sp,
            "efficiency": stats.efficiency(sp, workers),
            "original": (original or {}).get(workers),
            "worker_peak_rss_mib": stats.median(peak_rss_mib(t) for t in group),
        }
        if ideal_task_seconds:
            row["ideal"] = ideal = workers / ideal_task_seconds
            row["percent_of_ideal"] = 100.0 * med / ideal if med else None
        rows.append(row)
    return rows


def _pooled(trials: Sequence[TrialResult], workload: str, key: str) -> list[float]:
    return [v for t in trials if t.workload == workload and t.ok for v in t.metrics.get(key, [])]


def _ceiling(points: Sequence[CeilingPoint], e1: list[dict[str, Any]]) -> list[dict[str, Any]]:
    medians: dict[tuple[str, int], float | None] = {}
    grouped: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for p in points:
        if p.ok and p.cycles_per_second is not None:
            grouped[(p.script, p.clients)].append(p.cycles_per_second)
    for key, values in grouped.items():
        medians[key] = stats.median(values)
    e1_by_workers = {r["workers"]: r["median"] for r in e1}
    rows = []
    for clients in sorted({c for _, c in grouped}):
        a = medians.get(("skip_locked", clients))
        b = medians.get(("taskforge", clients))
        c = medians.get(("finalize_and_claim", clients))
        rows.append(
            {
                "clients": clients,
                "skip_locked": a,
                "taskforge": b,
                "finalize_and_claim": c,
                "taskforge_over_skip_locked": stats.ratio(b, a),
                "finalize_and_claim_over_skip_locked": stats.ratio(c, a),
                "e1": e1_by_workers.get(clients),
                "e1_over_taskforge": stats.ratio(e1_by_workers.get(clients), b),
                "e1_over_finalize_and_claim": stats.ratio(e1_by_workers.get(clients), c),
                "e1_over_skip_locked": stats.ratio(e1_by_workers.get(clients), a),
            }
        )
    return rows


def _longtx(trials: Sequence[TrialResult], workload: str) -> dict[str, Any]:
    group = [t for t in trials if t.workload == workload and t.ok]
    return {
        "trials": len(group),
        "seconds": group[0].options.get("seconds") if group else None,
        "cycles_per_second": stats.median(t.throughput for t in group),
        "claim_p50_ms": stats.median(t.metrics.get("claim_p50_ms") for t in group),
        "claim_p95_ms": stats.median(t.metrics.get("claim_p95_ms") for t in group),
        "claim_max_ms": stats.median(t.metrics.get("claim_max_ms") for t in group),
        "xmin_age_at_end": stats.median(t.metrics.get("xmin_age_at_end") for t in group),
    }


def peak_rss_mib(trial: TrialResult) -> float | None:
    """The largest peak RSS (MiB) among a trial's worker processes (None when not recorded)."""
    peaks = trial.metrics.get("worker_peak_rss_mib") or {}
    return max(peaks.values()) if peaks else None


def _async(trials: Sequence[TrialResult]) -> list[dict[str, Any]]:
    """The async workload's rows: throughput against the ideal (concurrency / sleep) and the
    worker's peak RSS (MiB), medians of trials."""
    rows = []
    for workload in ("async", "async-wide"):
        group = [t for t in trials if t.workload == workload and t.ok]
        if not group:
            continue
        first = group[0]
        ideal = first.concurrency / (first.options["payload"]["ms"] / 1000.0)
        med = stats.median(t.throughput for t in group)
        rows.append(
            {
                "workload": workload,
                "trials": len(group),
                "tasks": first.tasks,
                "concurrency": first.concurrency,
                "sleep_ms": first.options["payload"]["ms"],
                "median": med,
                "ideal": ideal,
                "percent_of_ideal": 100.0 * med / ideal if med else None,
                "span_seconds": stats.median(t.span_seconds for t in group),
                "worker_peak_rss_mib": stats.median(peak_rss_mib(t) for t in group),
            }
        )
    return rows


def summarize(trials: Sequence[TrialResult], points: Sequence[CeilingPoint]) -> dict[str, Any]:
    """The report's numbers (JSON-ready)."""
    e1 = _scaling(trials, "e1", original=ORIGINAL["e1"])
    peer = _scaling(trials, "peer")
    peer_by_workers = {r["workers"]: r["median"] for r in peer}
    for row in e1:
        row["peer"] = peer_by_workers.get(row["workers"])
        row["ours_over_peer"] = stats.ratio(row["median"], row["peer"])
    e6 = [t for t in trials if t.workload == "e6" and t.ok]
    lags = _pooled(trials, "e6", "recovery_lag_ms")
    pickup = _pooled(trials, "pickup", "pickup_ms")
    e5 = [t for t in trials if t.workload == "e5" and t.ok]
    return {
        "e1": e1,
        "e1_batched": _scaling(trials, "e1-batched"),
        "e2": _scaling(trials, "e2", ideal_task_seconds=0.05, original=ORIGINAL["e2"]),
        "e5": {
            "trials": len(e5),
            "median": stats.median(t.throughput for t in e5),
            "workers": e5[0].workers if e5 else None,
        },
        "e6": {
            "trials": len(e6),
            "median": stats.median(t.throughput for t in e6),
            "workers": e6[0].workers if e6 else None,
            "abandoned_attempts": sum(t.metrics.get("abandoned_attempts", 0) for t in e6),
            "recovery_lag_ms": lags,
            "recovery_lag_p50_ms": stats.percentile(lags, 50),
            "recovery_lag_p95_ms": stats.percentile(lags, 95),
            "recovery_lag_max_ms": max(lags) if lags else None,
            "kill_to_drain_seconds": stats.median(t.metrics.get("kill_to_drain_seconds") for t in e6),
        },
        "pickup": {
            "samples": len(pickup),
            "p50_ms": stats.percentile(pickup, 50),
            "p95_ms": stats.percentile(pickup, 95),
            "max_ms": max(pickup) if pickup else None,
        },
        "longtx": {"free": _longtx(trials, "longtx"), "held": _longtx(trials, "longtx-held")},
        "async": _async(trials),
        "peer": peer,
        "ceiling": _ceiling(points, e1),
        "failed_trials": [t.label for t in trials if not t.ok],
        "failed_points": [p.label for p in points if not p.ok],
        "original": {k: ({str(w): v for w, v in x.items()} if isinstance(x, dict) else x) for k, x in ORIGINAL.items()},
    }
