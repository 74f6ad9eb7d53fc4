"""`taskforge bench peer --quick` as a smoke test of the peers in the harness.

One run of the CLI against the test server (quick E1, then every peer: one and two processes with
one slot each, then the peer's batched mode); one test per peer then asserts that every trust
check of its trials passed, that the bundle records its exact versions and that the report
divides E1's figures by the peer's. It never asserts a speed. A peer whose runtime is missing
here (no node/npm, no Python >= 3.12, an install that cannot reach its registry) is skipped with
the harness's reason.

The peers' environments are cached in the checkout's git-ignored ``.taskforge/bench-peers``, so
only the first run installs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taskforge.benchmarks.peers import NAMES

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = ROOT / ".taskforge" / "bench-peers"


@pytest.fixture(scope="module")
def peer_run(tmp_path_factory: pytest.TempPathFactory, admin_dsn: str) -> dict[str, Any]:
    """The bundle of one `bench peer --quick` run: environment, summary, trials, report, exit code."""
    out = tmp_path_factory.mktemp("bench-peers") / "bundle"
    argv = ["bench", "peer", "--quick", "--peer-dir", str(PEER_DIR), "--out", str(out), "--dsn", admin_dsn]
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", *argv],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=1100,
    )
    # 1 = some trial failed: each test below then names its own failures
    assert proc.returncode in (0, 1), f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return {
        "environment": json.loads((out / "environment.json").read_text()),
        "summary": json.loads((out / "summary.json").read_text()),
        "trials": [json.loads(p.read_text())["trial"] for p in sorted((out / "trials").glob("*.json"))],
        "report": (out / "report.md").read_text(),
        "exit": proc.returncode,
    }


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("peer", NAMES)
def test_bench_peer_quick_passes_its_trust_checks(peer: str, peer_run: dict[str, Any]) -> None:
    recorded = peer_run["environment"]["peers"][peer]
    if "skipped" in recorded:
        pytest.skip(f"{peer}: {recorded['skipped']}")
    assert recorded["versions"] and all(recorded["versions"].values()) and recorded["runtime"]
    trials = [t for t in peer_run["trials"] if t["options"].get("peer") == peer]
    assert sorted((t["workers"], t["options"]["mode"]) for t in trials) == [
        (1, "batched"),
        (1, "single"),
        (2, "single"),
    ]
    for t in trials:
        assert t["ok"], f"{t['workload']} w{t['workers']}: {t['error']} {t['checks']}"
        assert {c["name"] for c in t["checks"]} >= {"counts", "clean_exits"}
        assert all(c["ok"] for c in t["checks"]), t["checks"]
        assert t["throughput"] and t["span_seconds"] > 0
        assert t["peak_rss_kib"] and all(t["peak_rss_kib"].values())
        cpu = t["metrics"]["cpu_per_task"]
        assert cpu["worker_us"] >= 0 and cpu["backend_us"] >= 0 and cpu["total_us"] > 0, cpu
    # ours / peer in both modes, from E1 of the same run
    summary = next(p for p in peer_run["summary"]["peers"] if p["name"] == peer)
    assert all(r["ours_over_peer"] for r in summary["single"]) and summary["batched"]["ours_over_peer"]
    assert f"**{peer}**" in peer_run["report"]
    assert f"| {peer} | 1 |" in peer_run["report"].split("## CPU per task")[1]


def test_bench_peer_quick_runs_e1_and_reports_the_targets(peer_run: dict[str, Any]) -> None:
    e1 = [t for t in peer_run["trials"] if t["workload"] in ("e1", "e1-batched")]
    assert e1 and all(t["ok"] for t in e1)
    assert "## Peers" in peer_run["report"] and "## Against the targets" in peer_run["report"]
    # TaskForge's E1 ran right before each of graphile-worker's trials (the 1.25 x targets' peer)
    if "skipped" not in peer_run["environment"]["peers"]["graphile-worker"]:
        beside = sorted(
            (t["workload"], t["workers"]) for t in peer_run["trials"] if "-beside-" in t["workload"] and t["ok"]
        )
        assert beside == [
            ("e1-batched-beside-graphile-worker", 1),
            ("e1-beside-graphile-worker", 1),
            ("e1-beside-graphile-worker", 2),
        ]
        one = next(r for r in peer_run["summary"]["targets"] if r["target"].startswith("one process, one slot, vs g"))
        assert one["figure"].endswith("(ours beside it)")
    assert peer_run["exit"] == 0, [t["workload"] for t in peer_run["trials"] if not t["ok"]]
