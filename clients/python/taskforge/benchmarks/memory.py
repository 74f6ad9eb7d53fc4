"""Peak memory of a trial's processes: ``VmHWM`` ("high water mark" of the resident set) from
``/proc/<pid>/status``, read just before the processes are stopped.

Linux only: elsewhere (or when the process is gone) the value is None, never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..processes import ProcessHarness

__all__ = ["parse_vmhwm_kib", "peak_rss_kib", "per_process_mib", "process_peak_rss_kib"]

PROC = Path("/proc")


def parse_vmhwm_kib(status: str) -> int | None:
    """The ``VmHWM:`` line of a /proc/<pid>/status text, in KiB (None when it has none)."""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "VmHWM":
            number, _, unit = value.strip().partition(" ")
            if unit.strip().lower() != "kb" or not number.isdigit():
                return None
            return int(number)
    return None


def process_peak_rss_kib(pid: int, proc: Path = PROC) -> int | None:
    """Peak resident set size of process ``pid`` in KiB, or None when it cannot be read."""
    try:
        return parse_vmhwm_kib((proc / str(pid) / "status").read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None


def peak_rss_kib(harness: ProcessHarness) -> dict[str, int | None]:
    """Every child of ``harness`` by name -> its peak RSS in KiB (None for one that has exited).
    Call it before stopping them: an exited process has no /proc entry."""
    return {p.name: process_peak_rss_kib(p.pid) if p.alive() else None for p in harness.processes}


def per_process_mib(trials_rss: Iterable[Mapping[str, int | None]], prefix: str) -> list[float]:
    """Peak RSS in MiB of every process whose name starts with ``prefix``, pooled over trials
    (values that could not be read left out)."""
    return [kib / 1024.0 for rss in trials_rss for name, kib in rss.items() if name.startswith(prefix) and kib]
