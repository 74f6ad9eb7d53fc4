"""`taskforge bench --quick` as a smoke test (the arithmetic and trust checks of the harness are
unit tests: tests/unit/test_bench_*.py; the peers have their own: test_bench_peers_quick.py).

It runs the quick E1, E2, E5, E6, pickup, long-transaction, async and ceiling workloads through the CLI
against the test server and asserts that the trust checks passed, every ceiling script ran and the bundle
exists; then the quick flow workload (about 35 s: ten trials, each in a fresh database), whose variants
must pass the same checks and appear, each divided by e1-plain, in the summary and the report; then the
quick soak (about 40 s, on a private server of its own with autovacuum on, a snapshot held 5 s). It never
asserts a speed: this machine is shared and small.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taskforge.benchmarks.ceiling import SCRIPTS
from taskforge.benchmarks.flow import VARIANTS
from taskforge.private_server import find_bindir

ROOT = Path(__file__).resolve().parents[2]
# --- the quick run, end to end ----------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_bench_quick_run_passes_its_trust_checks(tmp_path, admin_dsn):
    out = tmp_path / "bundle"
    failures = []
    before = _bench_databases(admin_dsn)
    for workload in ("e1", "e2", "e5", "e6", "pickup", "longtx", "async", "ceiling"):
        proc = _bench_quick(workload, out / workload, admin_dsn)
        if proc.returncode != 0:
            failures.append(f"{workload}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
            continue
        bundle = out / workload
        for name in ("environment.json", "summary.json", "report.md"):
            assert (bundle / name).is_file(), f"{workload}: {name} missing"
        raw = sorted((bundle / ("ceiling" if workload == "ceiling" else "trials")).glob("*.json"))
        assert raw, f"{workload}: no raw records"
        for path in raw:
            record = json.loads(path.read_text())
            assert record["environment"]["postgresql"]["version"]
            body = record.get("trial") or record.get("point")
            assert body["ok"], f"{path.name}: {body.get('error')} {body.get('checks')}"
            for check in body.get("checks", []):
                assert check["ok"], f"{path.name}: trust check {check['name']} failed: {check['detail']}"
        assert "Trust checks" in (bundle / "report.md").read_text()
    assert not failures, "\n\n".join(failures)
    assert (out / "e6" / "charts" / "e6_recovery_lag.png").is_file()
    # longtx: one trial without and one with a snapshot held elsewhere, which the view saw age.
    held = json.loads(next((out / "longtx" / "trials").glob("longtx-held-*.json")).read_text())["trial"]
    assert held["metrics"]["cycles"] > 0 and held["metrics"]["xmin_age_at_end"] > 0
    assert "## Long transactions" in (out / "longtx" / "report.md").read_text()
    assert (out / "e1" / "charts" / "throughput.png").is_file()
    # E1 ran one process with one slot and --prefetch 1 once per block; E2 ran each worker count
    # twice, plainly and with --prefetch 1 (the report shows both)
    e1_summary = json.loads((out / "e1" / "summary.json").read_text())
    assert [(r["workers"], r["trials"]) for r in e1_summary["e1_prefetch"]] == [(1, 1)]
    assert "E1 with `--prefetch 1`" in (out / "e1" / "report.md").read_text()
    e2 = json.loads((out / "e2" / "summary.json").read_text())
    assert [r["workers"] for r in e2["e2"]] == [r["workers"] for r in e2["e2_prefetch"]] != []
    assert "## E2 with `--prefetch 1`" in (out / "e2" / "report.md").read_text()
    # every ceiling script, the bare (a, a1, a2) and TaskForge's (b, c, c-batch), at both client counts
    points = [json.loads(p.read_text())["point"] for p in (out / "ceiling" / "ceiling").glob("*.json")]
    assert {(p["script"], p["clients"]) for p in points} == {(s, c) for s in SCRIPTS for c in (1, 2)}
    assert all(p["tasks_per_second"] and p["rows_finished"] > 0 for p in points)
    # E1's trials record each worker process's peak RSS, and the report gives it
    e1 = [json.loads(p.read_text())["trial"] for p in (out / "e1" / "trials").glob("*.json")]
    assert all(t["peak_rss_kib"] and all(t["peak_rss_kib"].values()) for t in e1)
    assert "## Memory: peak RSS per worker process" in (out / "e1" / "report.md").read_text()
    # ... and the CPU its measured tasks cost, in the workers and in their backends (a quick
    # trial's tasks may cost the worker less than one 10 ms clock tick: the sum is what must show)
    cpu = [t["metrics"]["cpu_per_task"] for t in e1]
    assert all(c["worker_us"] >= 0 and c["backend_us"] >= 0 and c["total_us"] > 0 for c in cpu), cpu
    assert "## CPU per task" in (out / "e1" / "report.md").read_text()
    # async: both sizes ran on one worker process, with its peak RSS recorded (never a speed).
    summary = json.loads((out / "async" / "summary.json").read_text())
    assert [r["workload"] for r in summary["async"]] == ["async", "async-wide"]
    assert all(r["rss_mib"] > 0 for r in summary["async"])
    assert "## Async handlers" in (out / "async" / "report.md").read_text()
    # every throwaway database was dropped (compared with the names present before, so that a
    # benchmark another session runs on the same server at the same time cannot fail this test)
    assert _bench_databases(admin_dsn) <= before


@pytest.mark.timeout(150)
def test_bench_flow_quick_run_checks_order_and_divides_by_plain(tmp_path, admin_dsn):
    out = tmp_path / "flow"
    before = _bench_databases(admin_dsn)
    proc = _bench_quick("flow", out, admin_dsn)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    trials = {p.stem: json.loads(p.read_text())["trial"] for p in (out / "trials").glob("*.json")}
    modes = (("", 1), ("-batched", 64))
    assert set(trials) == {f"e1-{v}{suffix}-b1-w1-c{c}" for v in VARIANTS for suffix, c in modes}
    for label, trial in trials.items():
        assert trial["ok"], f"{label}: {trial.get('error')} {trial.get('checks')}"
        names = {c["name"] for c in trial["checks"]}
        assert {"counts", "final_states", "histories", "invariants", "no_leftovers"} <= names, label
        # a chain's and an ordering key's tasks ran one after the other, in order
        assert ("sequence_order" in names) == (trial["options"]["flow"]["variant"] in ("chain", "ordering")), label
    rows = json.loads((out / "summary.json").read_text())["flow"]
    assert {(r["variant"], r["mode"]) for r in rows} == {(v, m) for v in VARIANTS for m in ("one slot", "batched")}
    for r in rows:
        assert r["median"] > 0 and r["variant_over_plain"] == pytest.approx(r["median"] / r["e1_plain"])
    report = (out / "report.md").read_text()
    assert "## Flow control and dependencies" in report and "| e1-ordering |" in report
    assert _bench_databases(admin_dsn) <= before


@pytest.mark.timeout(150)
def test_bench_soak_quick_reports_every_target_on_a_private_server_with_autovacuum(tmp_path):
    """`bench soak --quick --hold-snapshot 5` (about 40 s): its own server with autovacuum on, a
    figure for every bucket and a verdict for every target, the hold seen by the database; the
    figures must be sane (counts add up, latencies ordered), never fast: speed is not asserted."""
    try:
        find_bindir()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    out = tmp_path / "soak"
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "bench", "soak", "--quick", "--hold-snapshot", "5", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=140,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    data = json.loads((out / "soak.json").read_text())
    assert data["ok"] and all(c["ok"] for c in data["checks"]), data["checks"]
    assert data["environment"]["postgresql"]["settings"]["autovacuum"] == "on"
    figures = data["figures"]
    # every target judged with numbers (the hold was asked for), except claim p99: the hold (from
    # 12 s) and the minute after it cover every later bucket of a 30 s run, and the first bucket
    # is never judged against itself
    targets = figures["targets"]
    assert set(targets) == {"throughput", "claim_p99", "sizes", "hold_claim_p50", "hold_recovery"}
    assert targets["claim_p99"]["verdict"] == "not measured", targets["claim_p99"]
    assert "no later bucket to judge" in targets["claim_p99"]["detail"]
    judged = {k: t["verdict"] for k, t in targets.items() if k != "claim_p99"}
    assert set(judged.values()) <= {"met", "not met"}, targets
    assert f"{figures['targets']['throughput']['verdict']}: " in proc.stdout
    # 0.5 minute in 10 s buckets; each has tasks, probe claims and p50 <= p99
    buckets = figures["buckets"]
    assert [b["start_seconds"] for b in buckets] == [0, 10, 20]
    assert data["offered_per_second"] == pytest.approx(0.6 * data["peak"]["tasks_per_second"])
    for b in buckets:
        assert 0 < b["tasks_per_second"] <= 2 * data["offered_per_second"], b
        assert b["claims"] > 0 and 0 < b["claim_p50_ms"] <= b["claim_p99_ms"], b
        assert b["table_bytes"]["tasks"] > 0 and b["index_bytes"]["attempts"] > 0, b
    # what was counted finished is what was submitted during the soak (the submitter's own count
    # plus the probe's), less what finished in the 2 s the count lags and the drain after it
    submitted = int(re.search(r"submitted (\d+) tasks", (out / "logs" / "submitter.log").read_text()).group(1))
    finished = sum(s["finished"] for s in data["samples"])
    assert 0.5 * (submitted + len(data["probes"])) <= finished <= submitted + len(data["probes"])
    # the hold: the database saw its snapshot age and the dead tuples it kept
    hold = figures["hold"]
    assert hold["released_at"] - hold["started_at"] == pytest.approx(5, abs=1)
    assert hold["xmin_age_at_release"] > 0 and hold["dead_tuples_at_release"] > 0
    assert hold["index_reads_per_claim_before"] > 0 and hold["claim_p50_before_ms"] > 0
    # retention ran (the scheduler's --retain-seconds) and the report and chart exist
    assert "pruned" in (out / "logs" / "scheduler-1.log").read_text()
    report = (out / "report.md").read_text()
    assert "## Against the targets" in report and "## The snapshot hold" in report
    assert (out / "charts" / "soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bench_quick(workload: str, out: Path, admin_dsn: str) -> subprocess.CompletedProcess[str]:
    """``taskforge bench WORKLOAD --quick --out OUT`` through the CLI, against the test server."""
    return subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "bench", workload, "--quick", "--out", str(out), "--dsn", admin_dsn],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=240,
    )


def _bench_databases(admin_dsn: str) -> set[str]:
    """Names of the benchmark's throwaway databases now on the server."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'taskforge_bench_%'").fetchall()
    return {r[0] for r in rows}
