"""Records a benchmark run produces; each is written to the bundle as JSON as soon as it exists."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CeilingPoint", "CheckResult", "TrialResult", "to_json"]


@dataclass(frozen=True)
class CheckResult:
    """One trust check: its name, whether it held, and what was found (counts, offending rows)."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class TrialResult:
    """One measured trial of a workload.

    ``throughput`` is logical tasks per second over ``span_seconds`` (earliest attempt start to
    latest attempt finish of the measured tasks, database clock). ``metrics`` holds what a
    workload adds (recovery lags in ms, kill-to-drain seconds, pickup latencies in ms, ...).
    ``peak_rss_kib``: every process of the trial by name (``worker-1``, ``peer-2``, ...) -> its
    peak resident set size in KiB (``VmHWM`` of /proc/<pid>/status read just before SIGTERM;
    None where it could not be read).
    """

    workload: str
    block: int
    workers: int
    concurrency: int
    tasks: int
    ok: bool = False
    throughput: float | None = None
    span_seconds: float | None = None
    checks: list[CheckResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    peak_rss_kib: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None

    @property
    def label(self) -> str:
        """File-name-safe identity, e.g. ``e1-b2-w4-c1``."""
        return f"{self.workload}-b{self.block}-w{self.workers}-c{self.concurrency}"

    def failed_checks(self) -> list[CheckResult]:
        """The checks that did not hold."""
        return [c for c in self.checks if not c.ok]


@dataclass
class CeilingPoint:
    """One pgbench measurement: ``script`` (a key of ``ceiling.SCRIPTS``) at ``clients`` clients
    for ``seconds`` seconds. ``cycles_per_second`` is pgbench's tps (transactions of the script
    per second, without connection time); ``tasks_per_second`` counts rows finished over the same
    seconds (B per cycle for the batched scripts, whose ``batch`` is B; None for the others)."""

    script: str
    clients: int
    seconds: float
    block: int
    ok: bool = False
    cycles_per_second: float | None = None
    cycles: int | None = None
    tasks_per_second: float | None = None
    batch: int | None = None
    rows_filled: int = 0
    rows_left: int | None = None
    rows_finished: int | None = None
    error: str | None = None
    output_tail: str = ""

    @property
    def label(self) -> str:
        return f"ceiling-{self.script}-b{self.block}-c{self.clients}"


def to_json(record: Any) -> Any:
    """A JSON-ready form of a record (dataclasses become dicts; everything else is returned)."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    return record
