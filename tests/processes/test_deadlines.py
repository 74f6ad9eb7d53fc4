"""Attempt deadlines with real processes: a handler that ignores its deadline while the worker
keeps renewing can no longer hold its task (issue acceptance), and a cooperative handler sees
ctx.timed_out and gives up in time."""

from __future__ import annotations

import pytest

from itest_support import LONG, TEST_HANDLERS, attempts, submit, task, wait_for, wait_log, wait_registered

pytestmark = pytest.mark.timeout(300)


def _timeout(conn, task_type: str, seconds: float) -> None:
    conn.execute(
        "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_jitter => 0, timeout_seconds => %s)",
        (task_type, seconds),
    )


def test_a_handler_that_sleeps_past_its_deadline_is_timed_out_and_failed_by_its_budget(
    spawn, conn, queue, test_task_types
):
    _timeout(conn, "itest.stubborn", 1.0)
    spawn.scheduler()
    worker = spawn.worker("--queue", queue, "--import", str(TEST_HANDLERS), "--lease-seconds", "3", name=f"{queue}-w")
    wait_registered(conn, worker)
    # The handler sleeps 2.5 s: past its 1 s deadline, while the worker renews every second.
    task_id = submit(conn, "itest.stubborn", {"seconds": 2.5}, queue=queue, max_attempts=2)
    wait_for(lambda: task(conn, task_id)["state"] == "FAILED", timeout=LONG, message="the task to fail", procs=[worker])
    rows = attempts(conn, task_id)
    assert [(a["attempt_number"], a["state"], a["outcome"]) for a in rows] == [
        (1, "ABANDONED", "timed_out"),
        (2, "ABANDONED", "timed_out"),
    ]
    for a in rows:
        # No lease ever reached past the deadline, and recovery came only after it.
        assert a["lease_expires_at"] <= a["deadline_at"]
        assert a["finished_at"] >= a["deadline_at"]
        assert (a["deadline_at"] - a["started_at"]).total_seconds() == pytest.approx(1.0)
    assert task(conn, task_id)["last_error"]["type"] == "timed_out"
    wait_log(worker, f"task {task_id} attempt 1 passed its deadline")
    assert worker.alive()


def test_a_cooperative_handler_sees_its_deadline_and_the_task_is_retried(spawn, conn, queue, test_task_types):
    _timeout(conn, "itest.sleep_report", 0.5)
    try:
        spawn.scheduler()
        worker = spawn.worker("--queue", queue, "--import", str(TEST_HANDLERS), name=f"{queue}-w")
        wait_registered(conn, worker)
        task_id = submit(conn, "itest.sleep_report", {"ms": 5000}, queue=queue, max_attempts=1)
        wait_for(lambda: task(conn, task_id)["state"] in {"SUCCEEDED", "FAILED"}, timeout=LONG, procs=[worker])
        first = attempts(conn, task_id)[0]
        # ctx.sleep returned at the deadline (not after 5 s); the attempt ended about then.
        assert (first["finished_at"] - first["started_at"]).total_seconds() < 3.0
    finally:
        _timeout(conn, "itest.sleep_report", None)
