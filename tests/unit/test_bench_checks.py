"""The arithmetic and the trust checks of the benchmark harness (taskforge.benchmarks), on
made-up histories: no database."""

from __future__ import annotations

import datetime as dt

import pytest

from taskforge.benchmarks import stats, trust
from taskforge.benchmarks.ceiling import parse_pgbench
from taskforge.benchmarks.results import TrialResult
from taskforge.benchmarks.summary import summarize

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# --- arithmetic -----------------------------------------------------------------------------------


def test_throughput_is_tasks_over_database_span():
    assert stats.throughput(5000, at(10), at(12.5)) == pytest.approx(2000.0)
    assert stats.span_seconds(at(1), at(3.25)) == pytest.approx(2.25)
    with pytest.raises(ValueError):
        stats.throughput(10, at(5), at(5))


def test_median_percentile_speedup_efficiency():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert stats.median([]) is None
    # percentile_cont semantics: linear interpolation between closest ranks
    assert stats.percentile([10, 20, 30, 40], 50) == pytest.approx(25.0)
    assert stats.percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert stats.percentile([7.0], 95) == 7.0
    assert stats.speedup(1200.0, 400.0) == pytest.approx(3.0)
    assert stats.efficiency(3.0, 4) == pytest.approx(0.75)
    assert stats.speedup(None, 400.0) is None and stats.ratio(5.0, 0) is None


def test_summary_takes_medians_of_passing_trials_only():
    def trial(workers: int, rate: float, ok: bool = True) -> TrialResult:
        return TrialResult(workload="e1", block=1, workers=workers, concurrency=1, tasks=100, ok=ok, throughput=rate)

    rows = summarize([trial(1, 100), trial(1, 300), trial(1, 200), trial(4, 600), trial(4, 9999, ok=False)], [])["e1"]
    assert [r["workers"] for r in rows] == [1, 4]
    assert rows[0]["median"] == 200 and rows[1]["median"] == 600
    assert rows[1]["speedup"] == pytest.approx(3.0) and rows[1]["efficiency"] == pytest.approx(0.75)
    assert rows[1]["original"] == 1284.0


def test_long_transaction_summary_compares_medians_with_and_without_a_held_snapshot():
    def trial(workload: str, rate: float, p50: float, ok: bool = True, age: int | None = None) -> TrialResult:
        metrics = {"claim_p50_ms": p50, "claim_p95_ms": 2 * p50, "claim_max_ms": 10 * p50, "xmin_age_at_end": age}
        return TrialResult(
            workload=workload,
            block=1,
            workers=1,
            concurrency=1,
            tasks=100,
            ok=ok,
            throughput=rate,
            metrics=metrics,
            options={"seconds": 100},
        )

    trials = [
        trial("longtx", 800, 1.0),
        trial("longtx", 700, 1.2),
        trial("longtx-held", 150, 11.0, age=90000),
        trial("longtx-held", 9999, 0.1, ok=False),
    ]
    result = summarize(trials, [])["longtx"]
    assert result["free"]["cycles_per_second"] == 750 and result["free"]["claim_p50_ms"] == pytest.approx(1.1)
    assert result["held"]["trials"] == 1 and result["held"]["claim_p50_ms"] == 11.0
    assert result["held"]["xmin_age_at_end"] == 90000 and result["held"]["seconds"] == 100


def test_per_second_claim_medians():
    from taskforge.benchmarks.longtx import per_second_p50

    samples = [(0.1, 1.0), (0.5, 3.0), (1.2, 5.0), (2.99, 7.0), (3.0, 9.0)]  # 3.0 s is the last second's edge
    assert per_second_p50(samples, 3.0) == [2.0, 5.0, 8.0]


def test_parse_pgbench_output():
    out = (
        "number of transactions actually processed: 8990\n"
        "latency average = 0.667 ms\n"
        "tps = 2996.418236 (without initial connection time)\n"
    )
    assert parse_pgbench(out) == (pytest.approx(2996.418236), 8990)
    assert parse_pgbench("pgbench: error: connection refused") == (None, None)


# --- trust checks -----------------------------------------------------------------------------------


def _good(n: int = 3) -> tuple[list[int], list[trust.TaskRow], list[trust.AttemptRow]]:
    ids = list(range(1, n + 1))
    tasks = [trust.TaskRow(i, "SUCCEEDED", 1, at(0)) for i in ids]
    attempts = [trust.AttemptRow(i, 1, "SUCCEEDED", at(i), at(i + 30), at(i + 0.5)) for i in ids]
    return ids, tasks, attempts


def _failed(results) -> set[str]:
    return {c.name for c in results if not c.ok}


def test_trust_checks_pass_on_a_good_history():
    ids, tasks, attempts = _good()
    results = trust.check_history(ids, tasks, attempts, "once")
    assert _failed(results) == set()
    trust.require("good", results)


def test_trust_check_fails_on_a_duplicated_attempt():
    ids, tasks, attempts = _good()
    broken = [*attempts, attempts[1]]
    results = trust.check_history(ids, tasks, broken, "once")
    assert {"unique_attempts", "attempt_counts"} <= _failed(results)
    with pytest.raises(trust.TrustFailure, match="unique_attempts: 1 offending: task 2 attempt 1 x2"):
        trust.require("e1-b1-w1-c1", results)


def test_trust_checks_fail_on_missing_tasks_and_wrong_states():
    ids, tasks, attempts = _good()
    tasks = [tasks[0], trust.TaskRow(2, "RUNNING", 1)]
    assert {"counts", "terminal", "final_states"} <= _failed(trust.check_history(ids, tasks, attempts, "once"))


def test_fail_once_histories():
    ids = [1, 2]
    tasks = [trust.TaskRow(1, "SUCCEEDED", 2), trust.TaskRow(2, "SUCCEEDED", 1)]
    attempts = [
        trust.AttemptRow(1, 1, "FAILED"),
        trust.AttemptRow(1, 2, "SUCCEEDED"),
        trust.AttemptRow(2, 1, "SUCCEEDED"),
    ]
    failed = _failed(trust.check_history(ids, tasks, attempts, "fail_once"))
    assert {"histories", "attempt_counts"} <= failed


def test_recovered_needs_exactly_one_later_success():
    ids = [1, 2]
    tasks = [trust.TaskRow(1, "SUCCEEDED", 2), trust.TaskRow(2, "SUCCEEDED", 1)]
    good = [
        trust.AttemptRow(1, 1, "ABANDONED", at(0), at(5), at(5.01)),
        trust.AttemptRow(1, 2, "SUCCEEDED"),
        trust.AttemptRow(2, 1, "SUCCEEDED"),
    ]
    assert _failed(trust.check_history(ids, tasks, good, "recovered")) == set()
    no_replacement = [trust.AttemptRow(1, 1, "ABANDONED"), trust.AttemptRow(2, 1, "SUCCEEDED")]
    tasks_bad = [trust.TaskRow(1, "FAILED", 1), tasks[1]]
    assert "replacements" in _failed(trust.check_history(ids, tasks_bad, no_replacement, "recovered"))


def test_drained_and_invariants():
    assert trust.check_drained(0, 0, 0).ok
    assert not trust.check_drained(0, 1, 0).ok
    assert trust.check_invariants([]).ok
    assert not trust.check_invariants([("more attempts than budget", 7, None, "x")]).ok
