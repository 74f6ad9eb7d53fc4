"""The report's "Against the targets" rows, computed from one run's summary alone.

Every row compares two figures of the same run (or one figure with a fixed bound): TaskForge
against graphile-worker and the Python peers in every mode, against the bare ceilings (a1) and
(a2), our SQL alone against those ceilings, and the E2 / E6 / pickup targets kept from before.
Against graphile-worker, TaskForge's figure is that of the E1 trials run right beside its trials
(``runner.BESIDE``) when the run has them, else the E1 section's; the figure column says which.
A row whose figures the run did not measure says so (``met`` None), it is never guessed.

Rows come from the group functions in :data:`GROUPS`, in the report's order; a workload with
targets of its own adds a group function there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .peers import PYTHON_PEERS

__all__ = ["GROUPS", "Target", "at_least", "at_most", "rows"]

GRAPHILE = "graphile-worker"
#: TaskForge over graphile-worker, in every mode.
OVER_GRAPHILE = 1.25
#: TaskForge over every Python peer, in every mode.
OVER_PYTHON_PEERS = 3.0


@dataclass(frozen=True)
class Target:
    """One row: ``target`` (what is compared), ``figure`` (the measured numbers), ``value`` (the
    ratio, or the figure itself against a fixed bound), ``shown`` (``value`` as printed),
    ``wanted`` (the bound, as printed) and ``met`` (None: not measured in this run)."""

    target: str
    figure: str
    value: float | None
    shown: str
    wanted: str
    met: bool | None


def _n(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def at_least(target: str, ours: float | None, theirs: float | None, minimum: float, unit: str = "tasks/s") -> Target:
    """``ours / theirs >= minimum`` (throughputs of the same run)."""
    value = ours / theirs if ours is not None and theirs else None
    return Target(
        target,
        f"{_n(ours)} / {_n(theirs)} {unit}",
        value,
        "–" if value is None else f"{value:.2f} ×",
        f"≥ {minimum:g} ×",
        None if value is None else value >= minimum,
    )


def at_most(target: str, value: float | None, maximum: float, unit: str) -> Target:
    """``value <= maximum`` (a latency in ``unit``)."""
    shown = "–" if value is None else f"{value:.1f} {unit}"
    return Target(target, shown, value, shown, f"≤ {maximum:g} {unit}", None if value is None else value <= maximum)


def _row(rows: Sequence[dict[str, Any]], key: str, value: int) -> dict[str, Any]:
    return next((r for r in rows if r.get(key) == value), {})


def _peer(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next((p for p in summary["peers"] if p["name"] == name), {})


def _peer_batched(summary: dict[str, Any], name: str) -> float | None:
    median: float | None = (_peer(summary, name).get("batched") or {}).get("median")
    return median


def _e1(summary: dict[str, Any], workers: int) -> float | None:
    median: float | None = _row(summary["e1"], "workers", workers).get("median")
    return median


def _e1_batched(summary: dict[str, Any]) -> float | None:
    median: float | None = summary["e1_batched"][0]["median"] if summary["e1_batched"] else None
    return median


def _ceiling(summary: dict[str, Any], script: str, clients: int) -> float | None:
    value: float | None = _row(summary["ceiling"], "clients", clients).get(script)
    return value


def _beside(row: dict[str, Any], ours: float | None) -> tuple[float | None, str]:
    """TaskForge's figure for a graphile-worker row: the E1 trials run beside graphile-worker's
    (``ours_beside``, runner.BESIDE) where the run has them, else ``ours`` (the E1 section's);
    and the unit that says which."""
    if row.get("ours_beside") is not None:
        return row["ours_beside"], "tasks/s (ours beside it)"
    return ours, "tasks/s"


def _graphile(summary: dict[str, Any], target: str, processes: int | None, ours: float | None) -> Target:
    """A 1.25 x row against graphile-worker at ``processes`` one-slot processes, or (None) in its
    batched mode."""
    peer = _peer(summary, GRAPHILE)
    row = (peer.get("batched") or {}) if processes is None else _row(peer.get("single", []), "workers", processes)
    figure, unit = _beside(row, ours)
    return at_least(target, figure, row.get("median"), OVER_GRAPHILE, unit)


def _one_slot(summary: dict[str, Any]) -> list[Target]:
    ours = _e1(summary, 1)
    return [
        _graphile(summary, "one process, one slot, vs graphile-worker, 1 process", 1, ours),
        at_least("one process, one slot, vs (a1) at 1 client", ours, _ceiling(summary, "skip_locked_one", 1), 0.6),
    ]


def _four_processes(summary: dict[str, Any]) -> list[Target]:
    return [_graphile(summary, "four processes, one slot each, vs graphile-worker, 4 processes", 4, _e1(summary, 4))]


def _batched(summary: dict[str, Any]) -> list[Target]:
    ours = _e1_batched(summary)
    return [
        _graphile(summary, "one process, batched, vs graphile-worker's high-throughput mode", None, ours),
        at_least("one process, batched, vs (a2) at 1 client", ours, _ceiling(summary, "skip_locked_batch", 1), 0.8),
    ]


def _sql_alone(summary: dict[str, Any]) -> list[Target]:
    out = [
        at_least(
            f"(c) tf_finalize_and_claim vs (a1), {clients} client{'s' if clients > 1 else ''}",
            _ceiling(summary, "finalize_and_claim", clients),
            _ceiling(summary, "skip_locked_one", clients),
            0.8,
        )
        for clients in (1, 4)
    ]
    out.append(
        at_least(
            "(c-batch) tf_finalize_and_claim, B tasks a call, vs (a2), 1 client",
            _ceiling(summary, "finalize_and_claim_batch", 1),
            _ceiling(summary, "skip_locked_batch", 1),
            0.6,
        )
    )
    return out


def _python_peers(summary: dict[str, Any]) -> list[Target]:
    out = []
    for name in PYTHON_PEERS:
        peer = _peer(summary, name)
        single = peer.get("single") or [{"workers": 1, "median": None}]
        for row in single:
            out.append(
                at_least(
                    f"{row['workers']} process{'es' if row['workers'] > 1 else ''}, one slot, vs {name}",
                    _e1(summary, row["workers"]),
                    row["median"],
                    OVER_PYTHON_PEERS,
                )
            )
        out.append(
            at_least(
                f"batched vs {name} batched", _e1_batched(summary), _peer_batched(summary, name), OVER_PYTHON_PEERS
            )
        )
    return out


def _kept(summary: dict[str, Any]) -> list[Target]:
    out = []
    for key, mode in (("e2", ""), ("e2_prefetch", ", `--prefetch 1`")):
        if key not in summary:  # a summary from before e2-prefetch existed
            continue
        for workers in (1, 4):
            out.append(_e2(summary[key], workers, mode))
    out.append(at_most("E6 recovery lag after lease expiry, p95", summary["e6"]["recovery_lag_p95_ms"], 10, "ms"))
    out.append(at_most("idle pickup (NOTIFY path), median", summary["pickup"]["p50_ms"], 5, "ms"))
    return out


def _e2(rows: list[dict[str, Any]], workers: int, mode: str) -> Target:
    """The E2 row at ``workers`` one-slot workers (``mode``: how they ran, for the label)."""
    row = _row(rows, "workers", workers)
    percent = row.get("percent_of_ideal")
    return Target(
        f"E2, {workers} worker{'s' if workers > 1 else ''}{mode}",
        f"{_n(row.get('median'), 1)} tasks/s",
        percent,
        "–" if percent is None else f"{percent:.1f} % of ideal",
        "≥ 97 %",
        None if percent is None else percent >= 97.0,
    )


#: The groups of rows, in the report's order.
GROUPS: tuple[Callable[[dict[str, Any]], list[Target]], ...] = (
    _one_slot,
    _four_processes,
    _batched,
    _sql_alone,
    _python_peers,
    _kept,
)


def rows(summary: dict[str, Any]) -> list[Target]:
    """Every target row of ``summary`` (see :func:`.summary.summarize`), in report order."""
    return [row for group in GROUPS for row in group(summary)]
