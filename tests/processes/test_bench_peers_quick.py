"""`taskforge bench peer --quick` for each peer, as a smoke test of the harness around it.

One test per peer runs the quick trials (one and two processes with one slot each, then the
peer's batched mode) through the CLI against the test server and asserts that every trust check
passed and the bundle records the peer's exact versions. It never asserts a speed. A peer whose
runtime is missing here (no node/npm, no Python >= 3.12, an install that cannot reach its
registry) is skipped with the harness's reason.

The peers' environments are cached in the checkout's git-ignored ``.taskforge/bench-peers``, so
only the first run installs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taskforge.benchmarks.peers import NAMES

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = ROOT / ".taskforge" / "bench-peers"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("peer", NAMES)
def test_bench_peer_quick_passes_its_trust_checks(peer, tmp_path, admin_dsn):
    out = tmp_path / "bundle"
    argv = ["bench", "peer", "--quick", "--peers", peer, "--peer-dir", str(PEER_DIR), "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", *argv, "--dsn", admin_dsn],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=570,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    recorded = json.loads((out / "environment.json").read_text())["peers"][peer]
    if "skipped" in recorded:
        pytest.skip(f"{peer}: {recorded['skipped']}")
    assert recorded["versions"] and all(recorded["versions"].values())
    trials = [json.loads(p.read_text())["trial"] for p in sorted((out / "trials").glob("*.json"))]
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
        assert t["peak_rss_kib"] and all(v for v in t["peak_rss_kib"].values())
    report = (out / "report.md").read_text()
    assert "## Peers" in report and f"**{peer}**" in report and "## Against the targets" in report
