"""The chaos rig shared by the tests of this folder (``make chaos``; excluded from ``make test``).

One :class:`~chaos_rig.ChaosRig` per module: a private PostgreSQL server (never the shared one),
three workers and two schedulers. The process logs, the handlers' run log and ``report.json``
(the figures of every fault) go to ``.taskforge/chaos/``, which each run starts afresh; the
figures are also printed at the end of the run.

``partition_rig`` (test_partition.py) is a :class:`~partition_rig.PartitionRig`: the same with
the server and one worker in network namespaces of the test's own; it skips, saying why, where
they cannot be made (not root, no CAP_NET_ADMIN, no iptables). Its logs go to
``.taskforge/chaos/partition/``, its figures to ``report.json`` under ``network_partition``.
"""

from __future__ import annotations

import json
import shutil

import pytest
from rig_base import write_report

import netns
from chaos_rig import ROOT, ChaosRig
from partition_rig import PartitionRig

WORKDIR = ROOT / ".taskforge" / "chaos"
SUMMARIES: list[dict] = []
#: What report.json holds: the main rig's summary, and the partition rig's under "network_partition".
REPORT: dict = {}


@pytest.fixture(scope="module")
def rig():
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    REPORT.clear()
    chaos = ChaosRig(WORKDIR)
    try:
        yield chaos
    finally:
        summary = chaos.summary()
        summary["exit_codes"] = chaos.close()
        REPORT.update(summary)
        write_report(REPORT, WORKDIR / "report.json")
        SUMMARIES.append(summary)


@pytest.fixture(scope="module")
def partition_rig():
    reason = netns.unavailable()
    if reason:
        pytest.skip(f"network namespaces unavailable: {reason}")
    workdir = WORKDIR / "partition"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    net = netns.NetnsPair().create()
    try:
        chaos = PartitionRig(workdir, net)
    except BaseException:
        net.destroy()  # (idempotent: a rig that failed to start has closed itself already)
        raise
    try:
        yield chaos
    finally:
        summary = chaos.summary()
        summary["exit_codes"] = chaos.close()
        left = net.exists()
        REPORT["network_partition"] = summary
        write_report(REPORT, WORKDIR / "report.json")
        SUMMARIES.append(summary)
        assert not left, f"network namespaces left behind: {left}"


def pytest_terminal_summary(terminalreporter) -> None:
    for summary in SUMMARIES:
        terminalreporter.section("chaos figures")
        totals = summary["totals"]
        terminalreporter.write_line(
            f"{summary['server']}; {summary['setup']['workers']} workers x {summary['setup']['concurrency']} slots, "
            f"{summary['setup']['schedulers']} schedulers, lease {summary['setup']['lease_seconds']} s, "
            f"poll {summary['setup']['poll_seconds']} s"
        )
        header = (
            f"{'fault':<36}{'faults':>7}{'tasks':>6}{'retried':>8}{'replays':>8}{'abandon':>8}{'re-run':>7}"
            f"{'overlap':>8}{'drain s':>8}{'pickup ms':>14}"
        )
        terminalreporter.write_line(header)
        for r in summary["rounds"]:
            pickup = "/".join(f"{ms:.0f}" for ms in r["pickup_ms"])
            added = r["this_round"]
            terminalreporter.write_line(
                f"{r['fault']:<36}{len(r['injected']):>7}{r['tasks_submitted']:>6}{r['submit_errors_retried']:>8}"
                f"{r['submit_replays']:>8}{added['abandoned']:>8}{added['re_executions']:>7}"
                f"{added['overlaps_after_lease_expiry']:>8}{r['drain_seconds']:>8.1f}{pickup:>14}"
            )
        terminalreporter.write_line(
            f"faults injected {summary['faults_injected']}; tasks {totals.get('tasks')}; lost {totals.get('lost')}; "
            f"states {totals.get('states')}; attempts {totals.get('attempts')} (abandoned {totals.get('abandoned')}); "
            f"re-executions {totals.get('re_executions')} in {totals.get('double_run_tasks')} tasks, "
            f"{totals.get('overlaps_after_lease_expiry')} overlapping (all after lease expiry); "
            f"most attempts used {totals.get('max_attempts_used')}; pickup median {summary['pickup_ms']['median']} ms, "
            f"max {summary['pickup_ms']['max']} ms; {summary['wall_seconds']} s"
        )
        if "partition" in summary:
            terminalreporter.write_line(f"network partition: {json.dumps(summary['partition'])}")
        terminalreporter.write_line(f"report: {WORKDIR / 'report.json'}")
        terminalreporter.write_line(json.dumps(summary["exit_codes"]))
