"""From raw trials and ceiling points to the numbers the report shows (medians of trials).

Every figure is a median over the trials that passed their trust checks; failed trials are
listed, never averaged in. Units: tasks (or jobs, cycles) per second, milliseconds, seconds.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from . import flow, memory, pooler, stats, targets
from .peers import PEERS
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


def _rss(group: Sequence[TrialResult], prefix: str) -> dict[str, float | None]:
    """Peak RSS per process (MiB) of the processes named ``prefix...``, pooled over ``group``."""
    values = memory.per_process_mib((t.peak_rss_kib for t in group), prefix)
    return {"rss_mib": stats.median(values), "rss_mib_max": max(values, default=None)}


def _writes(group: Sequence[TrialResult]) -> dict[str, float | None]:
    """Median writes per measured task over ``group`` (:mod:`.writes`): WAL bytes, rows inserted,
    updated (of which HOT) and deleted."""
    keys = ("wal_bytes", "rows_inserted", "rows_updated", "rows_hot_updated", "rows_deleted")
    return {
        f"writes_{k}": stats.median(t.metrics.get("writes_per_task", {}).get(k) for t in group if t.ok) for k in keys
    }


def _cpu(group: Sequence[TrialResult]) -> dict[str, float | None]:
    """Median CPU microseconds per measured task over ``group`` (:mod:`.cpu`): the worker
    processes, their database backends and the sum."""
    keys = ("worker_us", "backend_us", "total_us")
    return {f"cpu_{k}": stats.median((t.metrics.get("cpu_per_task") or {}).get(k) for t in group if t.ok) for k in keys}


def _scaling(
    trials: Sequence[TrialResult],
    workload: str,
    ideal_task_seconds: float | None = None,
    original: dict[int, float] | None = None,
    process_prefix: str = "worker-",
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
            "concurrency": group[0].concurrency,
            "tasks": group[0].tasks,
            "trials": len(group),
            "median": med,
            "min": min(measured, default=None),
            "max": max(measured, default=None),
            "speedup": sp,
            "efficiency": stats.efficiency(sp, workers),
            "original": (original or {}).get(workers),
            **_rss(group, process_prefix),
            **_writes(group),
            **_cpu(group),
        }
        if ideal_task_seconds:
            row["ideal"] = ideal = workers / ideal_task_seconds
            row["percent_of_ideal"] = 100.0 * med / ideal if med else None
        rows.append(row)
    return rows


def _pooled(trials: Sequence[TrialResult], workload: str, key: str) -> list[float]:
    return [v for t in trials if t.workload == workload and t.ok for v in t.metrics.get(key, [])]


#: Ceiling script key -> its column in the summary rows (the scripts of ceiling.SCRIPTS).
CEILING_COLUMNS = (
    "skip_locked",
    "skip_locked_one",
    "skip_locked_batch",
    "skip_locked_history_one",
    "skip_locked_history_batch",
    "taskforge",
    "finalize_and_claim",
    "finalize_and_claim_batch",
    "taskforge_tables_one",
    "taskforge_tables_batch",
)
#: (numerator, denominator) of every ceiling ratio the report shows, by row key.
CEILING_RATIOS = {
    "taskforge_over_skip_locked": ("taskforge", "skip_locked"),
    "finalize_and_claim_over_skip_locked": ("finalize_and_claim", "skip_locked"),
    "finalize_and_claim_over_skip_locked_one": ("finalize_and_claim", "skip_locked_one"),
    "finalize_and_claim_batch_over_skip_locked_batch": ("finalize_and_claim_batch", "skip_locked_batch"),
    "e1_over_skip_locked": ("e1", "skip_locked"),
    "e1_over_skip_locked_one": ("e1", "skip_locked_one"),
    "e1_over_taskforge": ("e1", "taskforge"),
    "e1_over_finalize_and_claim": ("e1", "finalize_and_claim"),
    "e1_batched_over_skip_locked_batch": ("e1_batched", "skip_locked_batch"),
    # The ladder from the bare pattern to ours: + an attempt history, + TaskForge's tables, + the function.
    "skip_locked_history_one_over_skip_locked_one": ("skip_locked_history_one", "skip_locked_one"),
    "taskforge_tables_one_over_skip_locked_one": ("taskforge_tables_one", "skip_locked_one"),
    "finalize_and_claim_over_taskforge_tables_one": ("finalize_and_claim", "taskforge_tables_one"),
    "skip_locked_history_batch_over_skip_locked_batch": ("skip_locked_history_batch", "skip_locked_batch"),
    "taskforge_tables_batch_over_skip_locked_batch": ("taskforge_tables_batch", "skip_locked_batch"),
    "finalize_and_claim_batch_over_taskforge_tables_batch": ("finalize_and_claim_batch", "taskforge_tables_batch"),
}


def _ceiling(
    points: Sequence[CeilingPoint], e1: list[dict[str, Any]], e1_batched: float | None
) -> list[dict[str, Any]]:
    """One row per client count: the median tasks/s of every script (rows finished per second;
    pgbench's cycles/s for points recorded without it), E1 at the same worker count, E1 batched
    (at 1 client: one process) and the ratios of :data:`CEILING_RATIOS`."""
    grouped: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for p in points:
        rate = p.tasks_per_second if p.tasks_per_second is not None else p.cycles_per_second
        if p.ok and rate is not None:
            grouped[(p.script, p.clients)].append(rate)
    e1_by_workers = {r["workers"]: r["median"] for r in e1}
    rows = []
    for clients in sorted({c for _, c in grouped}):
        row: dict[str, Any] = {"clients": clients}
        row.update({name: stats.median(grouped.get((name, clients), [])) for name in CEILING_COLUMNS})
        row["e1"] = e1_by_workers.get(clients)
        row["e1_batched"] = e1_batched if clients == 1 else None
        row.update({key: stats.ratio(row[a], row[b]) for key, (a, b) in CEILING_RATIOS.items()})
        rows.append(row)
    return rows


def _peers(
    trials: Sequence[TrialResult], e1: list[dict[str, Any]], e1_batched: float | None, skipped: dict[str, str]
) -> list[dict[str, Any]]:
    """Per peer that ran: its single-slot rows (by processes) and its batched row, each with
    TaskForge's figure in the same mode and ours / peer; for a peer E1 ran beside
    (``runner.BESIDE``) also ``ours_beside`` and ``ours_beside_over_peer``."""
    ours = {r["workers"]: r["median"] for r in e1}
    out = []
    for name, peer in PEERS.items():
        single = _scaling(trials, f"peer-{name}", process_prefix="peer-")
        batched = _scaling(trials, f"peer-{name}-batched", process_prefix="peer-")
        ran = [t for t in trials if t.options.get("peer") == name]
        if not ran and name not in skipped:
            continue
        beside_single = _scaling(trials, f"e1-beside-{name}")
        beside_batched = _scaling(trials, f"e1-batched-beside-{name}")
        beside = {r["workers"]: r["median"] for r in beside_single}
        for row in single:
            row["ours"] = ours.get(row["workers"])
            row["ours_over_peer"] = stats.ratio(row["ours"], row["median"])
            row["ours_beside"] = beside.get(row["workers"])
            row["ours_beside_over_peer"] = stats.ratio(row["ours_beside"], row["median"])
        for row in batched:
            row["ours"] = e1_batched
            row["ours_over_peer"] = stats.ratio(e1_batched, row["median"])
            row["ours_beside"] = beside_batched[0]["median"] if beside_batched else None
            row["ours_beside_over_peer"] = stats.ratio(row["ours_beside"], row["median"])
        batched_trials = [t for t in ran if t.options.get("mode") == "batched"]
        bounds = [
            t.metrics["window_end_bound_seconds"] for t in ran if t.ok and "window_end_bound_seconds" in t.metrics
        ]
        out.append(
            {
                "name": name,
                "runtime": peer.runtime,
                "timing": peer.timing,
                "skipped": skipped.get(name),
                "versions": ran[0].options.get("versions") if ran else None,
                "runtime_versions": ran[0].options.get("runtime") if ran else None,
                "single": single,
                "batched": batched[0] if batched else None,
                "beside": beside_single,
                "beside_batched": beside_batched[0] if beside_batched else None,
                "batched_settings": batched_trials[0].options.get("settings") if batched_trials else None,
                "batched_source": batched_trials[0].options.get("source") if batched_trials else None,
                "window_end_bound_ms_max": 1000.0 * max(bounds) if bounds else None,
            }
        )
    return out


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
                **_rss(group, "worker-"),
            }
        )
    return rows


def _flow(trials: Sequence[TrialResult]) -> list[dict[str, Any]]:
    """The flow workload's rows, one per variant (:data:`.flow.VARIANTS`) and mode (one slot,
    batched) that has passing trials: the median tasks/s, the shape (:class:`.flow.FlowShape`
    as a dict), the median of e1-plain in the same mode of the same run (``e1_plain``) and
    their ratio (``variant_over_plain``, a ratio of medians as the ceiling ratios; None without
    a plain figure)."""
    rows = []
    for batched in (False, True):
        plain = stats.median(t.throughput for t in trials if t.workload == flow.workload("plain", batched) and t.ok)
        for variant in flow.VARIANTS:
            group = [t for t in trials if t.workload == flow.workload(variant, batched) and t.ok]
            if not group:
                continue
            measured = [t.throughput for t in group if t.throughput is not None]
            med = stats.median(measured)
            rows.append(
                {
                    "workload": group[0].workload,
                    "variant": variant,
                    "mode": "batched" if batched else "one slot",
                    "workers": group[0].workers,
                    "concurrency": group[0].concurrency,
                    "tasks": group[0].tasks,
                    "shape": group[0].options.get("flow"),
                    "trials": len(group),
                    "median": med,
                    "min": min(measured, default=None),
                    "max": max(measured, default=None),
                    "e1_plain": plain,
                    "variant_over_plain": stats.ratio(med, plain),
                }
            )
    return rows


def summarize(
    trials: Sequence[TrialResult], points: Sequence[CeilingPoint], skipped_peers: dict[str, str] | None = None
) -> dict[str, Any]:
    """The report's numbers (JSON-ready); ``skipped_peers``: peer -> why it could not run.
    ``targets`` holds the rows of :func:`.targets.rows`, computed from these numbers alone."""
    e1 = _scaling(trials, "e1", original=ORIGINAL["e1"])
    e1_batched = _scaling(trials, "e1-batched")
    e1_batched_median = e1_batched[0]["median"] if e1_batched else None
    e6 = [t for t in trials if t.workload == "e6" and t.ok]
    lags = _pooled(trials, "e6", "recovery_lag_ms")
    pickup = _pooled(trials, "pickup", "pickup_ms")
    e5 = [t for t in trials if t.workload == "e5" and t.ok]
    numbers = {
        "e1": e1,
        "e1_batched": e1_batched,
        "e1_prefetch": _scaling(trials, "e1-prefetch"),
        "e2": _scaling(trials, "e2", ideal_task_seconds=0.05, original=ORIGINAL["e2"]),
        "e2_prefetch": _scaling(trials, "e2-prefetch", ideal_task_seconds=0.05),
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
        "flow": _flow(trials),
        "pooler": pooler.summary_rows(trials),
        "peers": _peers(trials, e1, e1_batched_median, skipped_peers or {}),
        "ceiling": _ceiling(points, e1, e1_batched_median),
        "failed_trials": [t.label for t in trials if not t.ok],
        "failed_points": [p.label for p in points if not p.ok],
        "original": {k: ({str(w): v for w, v in x.items()} if isinstance(x, dict) else x) for k, x in ORIGINAL.items()},
    }
    numbers["targets"] = [dataclasses.asdict(row) for row in targets.rows(numbers)]
    return numbers
