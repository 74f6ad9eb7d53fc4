"""The soak's verdicts (taskforge.benchmarks.soak_report.analyse) on made-up runs: each target is
met or not met from the numbers alone, a hold that was not asked for is "not measured", and the
report and chart render from the JSON form."""

from __future__ import annotations

import dataclasses
from typing import Any

from taskforge.benchmarks import soak, soak_report

STEP = 5.0  # seconds between samples


def _run(
    minutes: float = 20,
    rate: Any = lambda t: 300.0,
    p50: Any = lambda t: 1.0,
    size: Any = lambda t: 10_000_000,
    hold: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """A run's JSON form: samples every 5 s at ``rate(t)`` tasks/s, 10 probe claims a second of
    ``p50(t)`` ms (p99 = 2 x p50), tasks' table ``size(t)`` bytes."""
    seconds = minutes * 60
    samples, probes = [], []
    inserted = reads = 0
    t = STEP
    while t <= seconds + 1e-9:
        finished = int(rate(t - soak.FINISH_LAG_SECONDS) * STEP)
        inserted += finished
        reads += finished * (2000 if hold and hold[0] <= t < hold[1] else 2)
        tables = {
            "tasks": {"live": 1, "dead": 5, "table_bytes": size(t), "index_bytes": 0, "inserted": inserted},
            "attempts": {"live": 1, "dead": 5, "table_bytes": 0, "index_bytes": 0, "inserted": inserted},
        }
        samples.append(
            {
                "at": t,
                "finished": finished,
                "interval_seconds": STEP,
                "tables": tables,
                "task_index_reads": reads,
                "task_index_scans": inserted,
                "index_reads": {},
                "xmin_age": 7,
                "backlog": 0,
            }
        )
        t += STEP
    for i in range(int(seconds * 10)):
        at = i / 10
        probes.append([at, p50(at) * (2.0 if i % 100 == 99 else 1.0), True])
    sizes = dataclasses.asdict(soak.FULL)
    return {
        "config": {"minutes": minutes, "hold_snapshot_seconds": None, "quick": False, "sizes": sizes},
        "environment": {},
        "peak": {"tasks_per_second": 500.0, "tasks": 5000},
        "offered_per_second": 300.0,
        "submit_per_second": 280.0,
        "samples": samples,
        "probes": probes,
        "hold": {"started_at": hold[0], "released_at": hold[1], "xmin_age_at_release": 9} if hold else None,
        "checks": [],
        "error": None,
        "ok": True,
        "soak_seconds": seconds,
    }


def _verdicts(data: dict[str, Any]) -> dict[str, str]:
    return {k: v["verdict"] for k, v in soak_report.analyse(data)["targets"].items()}


def test_a_steady_run_meets_every_target_and_an_unasked_hold_is_not_measured():
    figures = soak_report.analyse(_run())
    assert len(figures["buckets"]) == 20 and figures["window_buckets"] == 5
    assert all(b["tasks_per_second"] == 300.0 for b in figures["buckets"])
    assert {k: v["verdict"] for k, v in figures["targets"].items()} == {
        "throughput": "met",
        "claim_p99": "met",
        "sizes": "met",
        "hold_claim_p50": "not measured",
        "hold_recovery": "not measured",
    }


def test_throughput_falling_below_90_percent_in_the_last_window_is_not_met():
    assert _verdicts(_run(rate=lambda t: 300.0 if t < 900 else 260.0))["throughput"] == "not met"
    assert _verdicts(_run(rate=lambda t: 300.0 if t < 900 else 275.0))["throughput"] == "met"


def test_claim_p99_beyond_twice_the_first_minute_is_not_met_outside_the_hold_only():
    assert _verdicts(_run(p50=lambda t: 1.0 if t < 600 else 2.5))["claim_p99"] == "not met"
    # slow only during the hold and the minute after it: judged by the hold's targets instead
    slow_in_hold = _run(p50=lambda t: 5.0 if 480 <= t < 600 else 1.0, hold=(480, 580))
    assert _verdicts(slow_in_hold)["claim_p99"] == "met"


def test_sizes_still_growing_in_the_last_window_are_not_met():
    assert _verdicts(_run(size=lambda t: 10_000_000 + 10_000 * t))["sizes"] == "not met"  # +16 % in 5 min
    assert _verdicts(_run(size=lambda t: 10_000_000 + min(t, 600) * 10_000))["sizes"] == "met"  # level after 10 min


def test_a_hold_that_slows_claims_threefold_and_throughput_back_after_20_s():
    hold = (480.0, 580.0)
    data = _run(
        p50=lambda t: 3.0 if hold[0] + 30 <= t < hold[1] else 1.0,
        rate=lambda t: 100.0 if hold[0] <= t < hold[1] + 20 else 300.0,
        hold=hold,
    )
    figures = soak_report.analyse(data)
    held = figures["hold"]
    assert held["claim_p50_before_ms"] == 1.0 and held["claim_p50_worst_10s_ms"] == 3.0
    assert held["index_reads_per_claim_before"] == 2.0 and held["index_reads_per_claim_late_in_hold"] > 1000
    assert 20 <= held["back_after_release_seconds"] <= 35
    assert figures["targets"]["hold_claim_p50"]["verdict"] == "not met"
    assert figures["targets"]["hold_recovery"]["verdict"] == "met"


def test_throughput_not_back_within_a_minute_of_the_release_is_not_met():
    hold = (480.0, 580.0)
    data = _run(rate=lambda t: 100.0 if hold[0] <= t < hold[1] + 90 else 300.0, hold=hold)
    assert _verdicts(data)["hold_recovery"] == "not met"


def test_the_report_and_chart_render_from_the_json_form(tmp_path):
    data = _run(minutes=5, hold=(120.0, 180.0))
    data["environment"] = {"postgresql": {"version": "PostgreSQL 15", "settings": {"autovacuum": "on"}}}
    figures = soak_report.analyse(data)
    chart = soak_report.draw_chart(data, figures, tmp_path / "soak.png")
    report = soak_report.render_markdown(data, figures, [chart] if chart else [])
    assert chart is not None and chart.read_bytes()[:4] == b"\x89PNG"
    assert "| snapshot held: claim p50 <= 2 x before | **met** |" in report
    assert report.count("\n| ") == (1 + 5) + (1 + 5)  # header and 5 targets; header and a row per minute


def test_a_run_too_short_to_compare_with_itself_is_not_measured():
    """One minute is one bucket: its first and last windows, and its first and worst p99, would
    be the same bucket, so neither target can be met by comparing a bucket with itself."""
    figures = soak_report.analyse(_run(minutes=1))
    assert figures["targets"]["throughput"]["verdict"] == "not measured"
    assert "too short" in figures["targets"]["throughput"]["detail"]
    assert figures["targets"]["claim_p99"]["verdict"] == "not measured"
    # two whole buckets: one window each, judged
    assert _verdicts(_run(minutes=2))["throughput"] == "met"


def test_a_hold_covering_every_later_bucket_leaves_claim_p99_not_measured():
    assert _verdicts(_run(minutes=3, p50=lambda t: 9.0 if t >= 60 else 1.0, hold=(60.0, 175.0)))["claim_p99"] == (
        "not measured"
    )


def test_a_hold_still_open_at_the_end_is_named_not_measured():
    data = _run(minutes=5)
    data["hold"] = {"started_at": 120.0, "seconds": 400.0}  # never released
    targets = soak_report.analyse(data)["targets"]
    assert targets["hold_recovery"]["verdict"] == "not measured"
    assert "still held when the soak ended" in targets["hold_recovery"]["detail"]


def test_the_config_refuses_a_hold_past_the_end_and_a_length_that_is_not_a_number(tmp_path):
    assert soak.longest_hold_seconds(10) == 360.0  # from 40 % of 600 s to the end
    # 0.6 x 0.9 x 60 is 32.400000000000006 in floats: a hold of exactly the rest is still refused
    for minutes, rest in ((0.9, 32.4), (1.3, 46.8), (2.6, 93.6)):
        assert soak.longest_hold_seconds(minutes) == rest
    soak.SoakConfig(minutes=10, out_dir=tmp_path, hold_snapshot_seconds=359)
    for minutes, hold in (
        (10, 360),
        (0.9, 32.4),
        (10, float("nan")),
        (float("nan"), None),
        (0, None),
        (float("inf"), None),
    ):
        try:
            soak.SoakConfig(minutes=minutes, out_dir=tmp_path, hold_snapshot_seconds=hold)
        except ValueError as exc:
            assert str(exc).startswith("hold_snapshot_seconds: " if hold else "minutes: "), exc
        else:
            raise AssertionError(f"accepted minutes={minutes} hold={hold}")
