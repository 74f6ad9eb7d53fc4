"""The "Against the targets" rows (taskforge.benchmarks.targets) on a made-up summary: every row
divides figures of the same run, and a figure the run lacks is "not measured", never met."""

from __future__ import annotations

import pytest

from taskforge.benchmarks import targets
from taskforge.benchmarks.results import CeilingPoint, TrialResult
from taskforge.benchmarks.summary import summarize


def _trial(workload: str, workers: int, rate: float, peer: str | None = None) -> TrialResult:
    mode = "batched" if workload.endswith("batched") else "single"
    options = {"peer": peer, "mode": mode} if peer else {}
    return TrialResult(
        workload=workload, block=1, workers=workers, concurrency=1, tasks=100, ok=True, throughput=rate, options=options
    )


def _point(script: str, clients: int, tasks: float) -> CeilingPoint:
    return CeilingPoint(script=script, clients=clients, seconds=3, block=1, ok=True, tasks_per_second=tasks)


@pytest.fixture
def summary():
    trials = [
        _trial("e1", 1, 1600),
        _trial("e1", 4, 2000),
        _trial("e1-batched", 1, 30000),
        _trial("peer-graphile-worker", 1, 1280, "graphile-worker"),
        _trial("peer-graphile-worker", 4, 1800, "graphile-worker"),
        _trial("peer-graphile-worker-batched", 1, 24000, "graphile-worker"),
        _trial("peer-procrastinate", 1, 500, "procrastinate"),
        _trial("peer-procrastinate", 4, 700, "procrastinate"),
        _trial("peer-procrastinate-batched", 1, 9000, "procrastinate"),
    ]
    points = [
        _point("skip_locked_one", 1, 2500),
        _point("skip_locked_batch", 1, 36000),
        _point("finalize_and_claim", 1, 2100),
        _point("finalize_and_claim_batch", 1, 20000),
    ]
    return summarize(trials, points, {"oban": "needs Python >= 3.12: none found"})


def _by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["target"]: r for r in rows}


def test_graphile_and_ceiling_rows(summary):
    rows = _by_name(summary["targets"])
    one = rows["one process, one slot, vs graphile-worker, 1 process"]
    assert one["value"] == pytest.approx(1.25) and one["met"] is True and one["wanted"] == "≥ 1.25 ×"
    assert one["figure"] == "1,600 / 1,280 tasks/s"
    four = rows["four processes, one slot each, vs graphile-worker, 4 processes"]
    assert four["value"] == pytest.approx(2000 / 1800) and four["met"] is False
    assert rows["one process, batched, vs graphile-worker's high-throughput mode"]["met"] is True
    assert rows["one process, one slot, vs (a1) at 1 client"]["value"] == pytest.approx(0.64)
    assert rows["one process, batched, vs (a2) at 1 client"]["met"] is True
    assert rows["(c) tf_finalize_and_claim vs (a1), 1 client"]["value"] == pytest.approx(0.84)
    assert rows["(c) tf_finalize_and_claim vs (a1), 4 clients"]["met"] is None  # not measured
    assert rows["(c-batch) tf_finalize_and_claim, B tasks a call, vs (a2), 1 client"]["met"] is False


def test_python_peers_are_compared_in_every_mode_and_a_skipped_one_is_not_measured(summary):
    rows = _by_name(summary["targets"])
    assert rows["1 process, one slot, vs procrastinate"]["value"] == pytest.approx(3.2)
    assert rows["4 processes, one slot, vs procrastinate"]["met"] is False  # 2000 / 700 < 3
    assert rows["batched vs procrastinate batched"]["met"] is True
    assert rows["1 process, one slot, vs oban"]["met"] is None
    assert rows["batched vs pgqueuer batched"]["met"] is None


def test_kept_rows_and_bounds():
    kept = targets.at_most("E6 recovery lag after lease expiry, p95", 2.6, 10, "ms")
    assert kept.met is True and kept.shown == "2.6 ms" and kept.wanted == "≤ 10 ms"
    assert targets.at_most("pickup", None, 5, "ms").met is None
    assert targets.at_least("x", 100.0, 0.0, 1.0).met is None  # no division by a zero figure
    e2 = [r for r in targets.rows(summarize([], [])) if r.target.startswith("E2")]
    assert [r.target for r in e2] == [
        "E2, 1 worker",
        "E2, 4 workers",
        "E2, 1 worker, `--prefetch 1`",
        "E2, 4 workers, `--prefetch 1`",
    ] and all(r.met is None for r in e2)


def test_against_graphile_the_e1_trials_run_beside_its_trials_are_used_where_the_run_has_them():
    trials = [
        _trial("e1", 4, 1700),
        _trial("e1-beside-graphile-worker", 4, 2400),
        _trial("e1-beside-graphile-worker", 4, 2200),
        _trial("e1-beside-graphile-worker", 4, 2300),
        _trial("peer-graphile-worker", 4, 1800, "graphile-worker"),
        _trial("e1-batched", 1, 30000),
        _trial("peer-graphile-worker-batched", 1, 24000, "graphile-worker"),
    ]
    numbers = summarize(trials, [])
    rows = _by_name(numbers["targets"])
    four = rows["four processes, one slot each, vs graphile-worker, 4 processes"]
    assert four["value"] == pytest.approx(2300 / 1800) and four["met"] is True
    assert four["figure"] == "2,300 / 1,800 tasks/s (ours beside it)"
    # no batched trial ran beside it: the E1 section's figure, and the figure says so by its unit
    batched = rows["one process, batched, vs graphile-worker's high-throughput mode"]
    assert batched["figure"] == "30,000 / 24,000 tasks/s" and batched["value"] == pytest.approx(1.25)
    # no graphile-worker trial at one process: not measured, whatever E1 made
    assert rows["one process, one slot, vs graphile-worker, 1 process"]["met"] is None
    peer = next(p for p in numbers["peers"] if p["name"] == "graphile-worker")
    row = peer["single"][0]
    assert (row["ours"], row["ours_beside"]) == (1700, 2300)
    assert row["ours_beside_over_peer"] == pytest.approx(2300 / 1800)
