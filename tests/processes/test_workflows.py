"""Task dependencies run by real worker processes: the diamond of issue 18's acceptance.

A -> B, C -> D, submitted in one tf_submit_many call: A runs first, then B and C at the same time
(two slots), then D, whose handler reads B's and C's results through ctx.parent_results. With B
failing for good, D ends CANCELLED (dependency_failed) with no attempt and C still runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from taskforge import client

from itest_support import attempts, task, wait_for, wait_registered

pytestmark = pytest.mark.timeout(300)

FLOW_HANDLERS = Path(__file__).resolve().parents[1] / "helpers" / "itest_flow_handlers.py"


def _diamond(conn, task_type: str, queue: str, *, b_fails: bool) -> list[int]:
    steps = [
        {"payload": {"name": "A", "ms": 100}},
        {"payload": {"name": "B", "ms": 1500, "fail": b_fails}, "depends_on_positions": [0]},
        {"payload": {"name": "C", "ms": 1500}, "depends_on_positions": [0]},
        {"payload": {"name": "D"}, "depends_on_positions": [1, 2]},
    ]
    requests = [{"task_type": task_type, "queue": queue, "max_attempts": 1, **s} for s in steps]
    submitted = client.submit_many(conn, requests)
    assert [s.state for s in submitted] == ["QUEUED", "BLOCKED", "BLOCKED", "BLOCKED"]
    return [s.task_id for s in submitted]


def _run(spawn, conn, queue: str, ids: list[int]) -> None:
    worker = spawn.worker("--queue", queue, "--concurrency", "2", "--import", str(FLOW_HANDLERS))
    wait_registered(conn, worker)
    wait_for(
        lambda: all(task(conn, i)["finished_at"] is not None for i in ids),
        message="every task of the flow to end",
        procs=[worker],
    )


@pytest.mark.parametrize("task_type", ["itest.flow_step", "itest.async_flow_step"])
def test_diamond_runs_a_then_b_and_c_together_then_d_reading_both_results(
    spawn, conn, queue, test_task_types, task_type
):
    a, b, c, d = _diamond(conn, task_type, queue, b_fails=False)
    _run(spawn, conn, queue, [a, b, c, d])

    runs = {i: attempts(conn, i) for i in (a, b, c, d)}
    assert all(len(r) == 1 and r[0]["state"] == "SUCCEEDED" for r in runs.values()), runs
    start = {i: r[0]["started_at"] for i, r in runs.items()}
    end = {i: r[0]["finished_at"] for i, r in runs.items()}
    assert start[b] >= end[a] and start[c] >= end[a]
    assert start[b] < end[c] and start[c] < end[b], "B and C should have run at the same time"
    assert start[d] >= max(end[b], end[c])
    b_result, c_result = task(conn, b)["result"], task(conn, c)["result"]
    assert task(conn, d)["result"] == {"name": "D", "parents": {str(b): b_result, str(c): c_result}}
    assert b_result["parents"] == {str(a): task(conn, a)["result"]}
    assert client.invariant_violations(conn) == []


def test_diamond_with_b_failing_cancels_d_and_still_runs_c(spawn, conn, queue, test_task_types):
    a, b, c, d = _diamond(conn, "itest.flow_step", queue, b_fails=True)
    _run(spawn, conn, queue, [a, b, c, d])

    assert [task(conn, i)["state"] for i in (a, b, c, d)] == ["SUCCEEDED", "FAILED", "SUCCEEDED", "CANCELLED"]
    d_row = task(conn, d)
    assert d_row["cancel_reason"] == "dependency_failed" and d_row["attempt_count"] == 0
    assert attempts(conn, d) == []
    assert client.invariant_violations(conn) == []
