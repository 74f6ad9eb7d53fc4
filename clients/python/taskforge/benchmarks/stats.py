"""The arithmetic of the report: medians, percentiles, throughput, speedup, efficiency.

Pure functions over numbers and timestamps; timestamps are database ``timestamptz`` values
(``datetime`` with a time zone), so every duration is on the database clock.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Iterable, Sequence

__all__ = [
    "efficiency",
    "median",
    "percentile",
    "poll_end_bound_seconds",
    "ratio",
    "span_seconds",
    "speedup",
    "throughput",
]


def median(values: Iterable[float | None]) -> float | None:
    """Median of the values (None when there are none)."""
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0 <= q <= 100) by linear interpolation between closest ranks, as
    PostgreSQL's ``percentile_cont(q / 100)``; None for no values."""
    data = sorted(values)
    if not data:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def span_seconds(first_start: dt.datetime, last_finish: dt.datetime) -> float:
    """Seconds from the earliest attempt start to the latest attempt finish (database clock)."""
    return (last_finish - first_start).total_seconds()


def throughput(tasks: int, first_start: dt.datetime, last_finish: dt.datetime) -> float:
    """Logical tasks per second: ``tasks / (last_finish - first_start)``. Raises ValueError for
    an empty or negative span (it would mean the timestamps are wrong)."""
    seconds = span_seconds(first_start, last_finish)
    if seconds <= 0:
        raise ValueError(f"throughput needs a positive span, got {seconds} s")
    return tasks / seconds


def poll_end_bound_seconds(start: dt.datetime, last_busy: dt.datetime | None, drained: dt.datetime) -> float:
    """The error bound of a window whose end is timed by polling (database clock): the end is
    ``drained``, the first poll that found nothing left, and the true end lies after the later
    of ``start`` and ``last_busy`` (the last poll that still found work; None when none did), so
    the measured span is at most this many seconds too long. Raises ValueError when ``drained``
    precedes ``start``."""
    if drained < start:
        raise ValueError(f"the drained poll ({drained}) precedes the window's start ({start})")
    earliest = start if last_busy is None else max(start, last_busy)
    return (drained - earliest).total_seconds()


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def speedup(value: float | None, baseline: float | None) -> float | None:
    """Throughput at N workers over the throughput at 1 worker."""
    return ratio(value, baseline)


def efficiency(speedup_value: float | None, workers: int) -> float | None:
    """Parallel efficiency: speedup / workers (1.0 = perfectly linear)."""
    return ratio(speedup_value, workers)
