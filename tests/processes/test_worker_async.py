"""async def handlers in real worker processes: cancellation and deadlines the asyncio way, a
stalled event loop, sync and async handlers side by side, SIGTERM with coroutines in flight, and
thousands of concurrent attempts in one process."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from taskforge.benchmarks.workloads import submit_batch

from itest_support import (
    ASYNC_TEST_HANDLERS,
    LONG,
    all_in,
    attempts,
    history,
    submit,
    task,
    wait_for,
    wait_log,
    wait_registered,
    wait_running,
    worker_row,
)

pytestmark = pytest.mark.timeout(300)

#: Threads of a worker besides its sync slots: main, dispatcher, renewer, heartbeat, listener, the
#: hung-statement watchdog, and, with async handlers, the event loop and its watchdog.
BASE_THREADS, ASYNC_THREADS = 6, 2


def threads_of(proc) -> int:
    """The number of threads of a running process (Linux /proc)."""
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads: line")


def test_a_cancel_request_cancels_the_running_coroutine_and_the_task_ends_cancelled(
    spawn, conn, queue, test_task_types, tmp_path
):
    worker = spawn.worker("--queue", queue, "--import", str(ASYNC_TEST_HANDLERS), "--lease-seconds", "2")
    wait_registered(conn, worker)
    marker = tmp_path / "cancelled.json"
    task_id = submit(conn, "itest.async_cancellable", {"seconds": 60, "marker": str(marker)}, queue=queue)
    wait_running(conn, task_id, procs=[worker])
    wait_log(worker, f"claimed task {task_id} attempt 1")
    conn.execute("SELECT * FROM taskforge.tf_cancel(task_id => %s)", (task_id,))
    # The renewer learns of the request at the next renewal (every lease/3 = 0.67 s).
    wait_for(lambda: task(conn, task_id)["state"] == "CANCELLED", message="the task to be cancelled", procs=[worker])
    assert json.loads(marker.read_text()) == {"cancelled": True, "cancel_requested": True, "timed_out": False}
    (attempt,) = attempts(conn, task_id)
    assert (attempt["state"], attempt["outcome"]) == ("CANCELLED", "cancelled")
    assert attempt["error"]["message"] == "cancel requested (tf_cancel)"
    assert (attempt["finished_at"] - attempt["started_at"]).total_seconds() < 30
    wait_log(
        worker,
        f"task {task_id} attempt 1: cancel requested (ctx.cancel_requested is now True; cancelling its coroutine)",
    )
    assert worker.alive()


def test_a_passed_deadline_cancels_the_coroutine_and_the_attempt_is_timed_out_and_retried(
    spawn, conn, queue, test_task_types, tmp_path
):
    conn.execute(
        "SELECT taskforge.tf_register_task_type(task_type => 'itest.async_cancellable', backoff_base_seconds => 0.1, "
        "backoff_jitter => 0, timeout_seconds => 1)"
    )
    try:
        spawn.scheduler()
        worker = spawn.worker("--queue", queue, "--import", str(ASYNC_TEST_HANDLERS), "--lease-seconds", "3")
        wait_registered(conn, worker)
        marker = tmp_path / "deadline.json"
        task_id = submit(
            conn, "itest.async_cancellable", {"seconds": 60, "marker": str(marker)}, queue=queue, max_attempts=2
        )
        wait_for(lambda: task(conn, task_id)["state"] == "FAILED", message="the budget to be spent", procs=[worker])
        rows = attempts(conn, task_id)
        # Both attempts: the coroutine was cancelled at the deadline, and the database, which
        # refuses an outcome past it, recorded the attempt timed_out; the first was retried.
        assert [(a["attempt_number"], a["state"], a["outcome"]) for a in rows] == [
            (1, "ABANDONED", "timed_out"),
            (2, "ABANDONED", "timed_out"),
        ]
        for a in rows:
            assert a["lease_expires_at"] <= a["deadline_at"] <= a["finished_at"]
            assert (a["finished_at"] - a["started_at"]).total_seconds() < 10
        assert json.loads(marker.read_text()) == {"cancelled": True, "cancel_requested": False, "timed_out": True}
        log = worker.log()
        assert (
            f"task {task_id} attempt 1 (type itest.async_cancellable) passed its deadline (timeout_seconds 1.0): "
            "cancelling its coroutine" in log
        )
        # The worker sends its late outcome just after the deadline; the database refuses it either
        # way: as past the deadline, or, when a scheduler's pass at the deadline recovered the
        # attempt first (it wakes 2 ms after it), as no longer running. Both record timed_out.
        refused = f"tf_finalize did not accept the retryable outcome of task {task_id} attempt 1: "
        assert f"{refused}the attempt passed" in log or f"{refused}not_running (task is QUEUED)" in log
        assert worker.alive()
    finally:
        conn.execute(
            "SELECT taskforge.tf_register_task_type(task_type => 'itest.async_cancellable', "
            "backoff_base_seconds => 0.1, backoff_jitter => 0, timeout_seconds => NULL)"
        )


def test_a_blocking_call_in_an_async_handler_is_reported_and_leases_are_still_renewed(
    spawn, conn, queue, test_task_types
):
    spawn.scheduler()  # would recover the task if its 2 s lease ever lapsed
    worker = spawn.worker("--queue", queue, "--import", str(ASYNC_TEST_HANDLERS), "--lease-seconds", "2")
    wait_registered(conn, worker)
    task_id = submit(conn, "itest.async_blocker", {"seconds": 3}, queue=queue)
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[worker])
    (attempt,) = attempts(conn, task_id)
    assert attempt["state"] == "SUCCEEDED" and attempt["duration_seconds"] >= 3.0  # 1.5 leases, renewed
    log = worker.log()
    assert "the event loop of async handlers has not run for" in log
    assert f"it is blocked in task {task_id} attempt 1 (type itest.async_blocker)" in log
    wait_log(worker, "the event loop of async handlers runs again after a stall of")
    assert "lease lost" not in log


def test_sync_and_async_handlers_run_side_by_side_in_one_worker(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, "--concurrency", "8", log_level="INFO")
    wait_registered(conn, worker)
    ids = {
        kind: [submit(conn, kind, payload, queue=queue) for _ in range(10)]
        for kind, payload in (("sleep", {"ms": 300}), ("async_sleep", {"ms": 300}), ("noop", {}), ("async_noop", {}))
    }
    everything = [task_id for group in ids.values() for task_id in group]
    most = 0

    def drained() -> bool:
        nonlocal most
        most = max(most, threads_of(worker))
        return all_in(conn, everything, {"SUCCEEDED"})

    wait_for(drained, message="every task to succeed", procs=[worker])
    for task_id in everything:
        assert history(conn, task_id) == ["SUCCEEDED"]
    assert json.loads(json.dumps(task(conn, ids["async_sleep"][0])["result"])) == {"slept_ms": 300}
    assert "(async: async_noop,async_sleep)" in worker.log()
    # Sync slot threads only for sync attempts: never more than --concurrency of them.
    assert most <= BASE_THREADS + ASYNC_THREADS + 8, most


def test_sigterm_lets_running_coroutines_finish_claims_nothing_new_and_deregisters(spawn, conn, queue):
    spawn.scheduler()
    # Lease 2 s < the 4 s sleeps: the attempts only survive if renewals go on during the grace period.
    worker = spawn.worker("--queue", queue, "--concurrency", "4", "--lease-seconds", "2", name=f"{queue}-w")
    worker_id = wait_registered(conn, worker)
    long_ids = [submit(conn, "async_sleep", {"ms": 4000}, queue=queue) for _ in range(4)]
    for task_id in long_ids:
        wait_running(conn, task_id, 1, procs=[worker])
    waiting_ids = [submit(conn, "async_noop", queue=queue) for _ in range(3)]
    for task_id in long_ids:
        wait_log(worker, f"claimed task {task_id} attempt 1")

    worker.signal(signal.SIGTERM)
    assert worker.wait(LONG) == 0, worker.log()

    for task_id in long_ids:
        assert history(conn, task_id) == ["SUCCEEDED"]
    for task_id in waiting_ids:
        row = task(conn, task_id)
        assert (row["state"], row["attempt_count"]) == ("QUEUED", 0)
    row = worker_row(conn, f"{queue}-w")
    assert str(row["worker_id"]) == worker_id and row["liveness"] == "stopped"
    log = worker.log()
    assert "SIGTERM received" in log and "deregistered" in log
    assert "lease lost" not in log and log.count("claimed task") == 4


def test_one_process_holds_thousands_of_sleeping_coroutines(spawn, conn, queue, db_dsn):
    worker = spawn.worker("--queue", queue, "--concurrency", "5000", "--task-type", "async_sleep", log_level="WARNING")
    wait_registered(conn, worker)
    task_ids = submit_batch(db_dsn, "async_sleep", {"ms": 3000}, 6000, queue=queue)
    started = time.monotonic()
    most = 0

    def drained() -> bool:
        nonlocal most
        most = max(most, threads_of(worker))
        return all_in(conn, task_ids, {"SUCCEEDED"})

    wait_for(drained, timeout=LONG, interval=0.2, message="6000 tasks to succeed", procs=[worker])
    elapsed = time.monotonic() - started
    # How many attempts ran at once (database clock): thousands, on one event loop.
    overlap = conn.execute(
        "SELECT max(running) FROM (SELECT sum(delta) OVER (ORDER BY at, delta) AS running FROM ("
        "  SELECT started_at AS at, 1 AS delta FROM taskforge.attempts WHERE task_id = ANY(%(ids)s)"
        "  UNION ALL SELECT finished_at, -1 FROM taskforge.attempts WHERE task_id = ANY(%(ids)s)) e) s",
        {"ids": task_ids},
    ).fetchone()[0]
    rows = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE state = 'SUCCEEDED') FROM taskforge.attempts WHERE task_id = ANY(%s)",
        (task_ids,),
    ).fetchone()
    assert rows == (6000, 6000)
    assert overlap >= 2000, overlap
    assert most == BASE_THREADS + ASYNC_THREADS, most  # no sync slot thread was started
    print(f"6000 x 3 s sleeps at --concurrency 5000: {elapsed:.1f} s, {overlap} at once")
    worker.signal(signal.SIGTERM)
    assert worker.wait(LONG) == 0
