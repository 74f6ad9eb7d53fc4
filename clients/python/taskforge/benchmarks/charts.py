"""PNG charts of a run, drawn with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["draw_all"]


def _pyplot() -> Any:  # matplotlib.pyplot, imported only when charts are drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(rows: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    pairs = [(r["workers"], r[key]) for r in rows if r.get(key) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _worker_axis(ax: Any, rows: list[dict[str, Any]]) -> None:
    """Log2 x axis labelled with the worker counts themselves; y from 0."""
    counts = sorted({r["workers"] for r in rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts, labels=[str(c) for c in counts])
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _peer_lines(summary: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, single-slot rows) of every peer that ran."""
    return [(p["name"], p["single"]) for p in summary.get("peers", []) if p["single"]]


def throughput_chart(summary: dict[str, Any], path: Path) -> Path | None:
    """E1 (ours, every peer with one slot per process, original) and E2 (ours, ours with
    ``--prefetch 1``, ideal, original): tasks/s by worker processes."""
    if not summary["e1"] and not summary["e2"]:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        (axes[0], "e1", [(label, rows, "s--") for label, rows in _peer_lines(summary)]),
        (axes[1], "e2", [("ideal", summary["e2"], "s--"), ("--prefetch 1", summary.get("e2_prefetch") or [], "d-.")]),
    )
    for ax, name, extra in panels:
        rows = summary[name]
        if not rows:
            ax.set_visible(False)
            continue
        lines = [("TaskForge (median)", rows, "median", "o-")]
        lines += [(label, series, "ideal" if label == "ideal" else "median", style) for label, series, style in extra]
        lines.append(("original (published)", rows, "original", "^:"))
        for label, series, key, style in lines:
            xs, ys = _series(series, key)
            if xs:
                ax.plot(xs, ys, style, label=label)
        ax.set_title(f"{name.upper()}: throughput by worker processes")
        ax.set_xlabel("worker processes")
        ax.set_ylabel("tasks/s")
        _worker_axis(ax, rows)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def efficiency_chart(summary: dict[str, Any], path: Path) -> Path | None:
    """Parallel efficiency (speedup / workers) by worker processes: E1, E2 and every peer."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    series = [("E1 TaskForge", summary["e1"]), ("E2 TaskForge", summary["e2"]), *_peer_lines(summary)]
    drawn = []
    for label, rows in series:
        xs, ys = _series(rows, "efficiency")
        if xs:
            ax.plot(xs, ys, "o-", label=label)
            drawn += rows
    if not drawn:
        plt.close(fig)
        return None
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_title("Parallel efficiency (speedup / workers)")
    ax.set_xlabel("worker processes")
    _worker_axis(ax, drawn)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def batched_chart(summary: dict[str, Any], path: Path) -> Path | None:
    """One process in each system's batched mode: TaskForge E1 batched and every peer's documented
    high-throughput setting, tasks/s (median of trials)."""
    bars = [("TaskForge", summary["e1_batched"][0]["median"])] if summary["e1_batched"] else []
    bars += [(p["name"], p["batched"]["median"]) for p in summary.get("peers", []) if p["batched"]]
    bars = [(label, value) for label, value in bars if value is not None]
    if len(bars) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.bar([b[0] for b in bars], [b[1] for b in bars], color=["C0"] + ["C7"] * (len(bars) - 1))
    ax.set_title("One process, batched: TaskForge and each peer's high-throughput setting")
    ax.set_ylabel("tasks/s")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def recovery_lag_chart(summary: dict[str, Any], path: Path) -> Path | None:
    """E6: distribution of recovery lag after lease expiry (ms), with p50 and p95 marked."""
    lags = summary["e6"]["recovery_lag_ms"]
    if not lags:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.hist(lags, bins=min(30, max(5, len(lags) // 2)))
    for key, label in (("recovery_lag_p50_ms", "p50"), ("recovery_lag_p95_ms", "p95")):
        ax.axvline(
            summary["e6"][key],
            linestyle="--",
            color="black" if label == "p95" else "grey",
            label=f"{label} {summary['e6'][key]:.1f} ms",
        )
    ax.set_title("E6: recovery lag after lease expiry")
    ax.set_xlabel("ms (attempt finished_at - lease_expires_at)")
    ax.set_ylabel("abandoned attempts")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_all(summary: dict[str, Any], charts_dir: Path) -> list[Path]:
    """Draw every chart the run has data for; return the files written."""
    charts_dir.mkdir(parents=True, exist_ok=True)
    drawn = [
        throughput_chart(summary, charts_dir / "throughput.png"),
        efficiency_chart(summary, charts_dir / "efficiency.png"),
        batched_chart(summary, charts_dir / "batched.png"),
        recovery_lag_chart(summary, charts_dir / "e6_recovery_lag.png"),
    ]
    return [p for p in drawn if p is not None]
