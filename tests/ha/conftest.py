"""The failover rig's shared parts (``make ha``, ``make ha-short``; excluded from ``make test``).

Each test starts its own :class:`~ha_rig.HaRig` (etcd and two Patroni nodes of its own, never
the shared server) in ``.taskforge/ha/<test>/`` (process logs, the handler's run log, the
submitter's acknowledgements, the cluster's logs), which each run starts afresh. Every test's
figures go to ``.taskforge/ha/report.json`` under its name and are printed at the end of the run.

``TASKFORGE_HA_SHORT=1`` (``make ha-short``, the form CI runs) shortens the load around each
failover; the checks are the same.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from rig_base import write_report

from ha_rig import ROOT, HaRig

WORKDIR = ROOT / ".taskforge" / "ha"
REPORT: dict[str, Any] = {}


@pytest.fixture(scope="session", autouse=True)
def _fresh_report() -> Iterator[None]:
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    yield


@pytest.fixture()
def make_rig(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Factory: ``make_rig(synchronous=..., replication_lag=..., lease_seconds=...)`` starts a
    rig in this test's folder; it is closed (and its figures reported) after the test."""
    rigs: list[HaRig] = []

    def make(**options: Any) -> HaRig:
        rig = HaRig(WORKDIR / request.node.name, **options)
        rig.start()
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        summary = rig.summary()
        summary["exit_codes"] = rig.close()
        REPORT[request.node.name] = summary
        write_report(REPORT, WORKDIR / "report.json")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REPORT:
        return
    terminalreporter.section("failover figures")
    for name, summary in REPORT.items():
        terminalreporter.write_line(f"{name}: {json.dumps(summary)}")
    terminalreporter.write_line(f"report: {WORKDIR / 'report.json'}")
