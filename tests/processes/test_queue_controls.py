"""Queue pause and concurrency limits with real worker processes (issue acceptance: a limit of
2 with 8 worker slots never has more than 2 of the queue's tasks RUNNING)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from itest_support import LONG, all_in, submit, wait_for, wait_registered

pytestmark = pytest.mark.timeout(300)


def test_a_limit_of_two_holds_with_eight_worker_slots(spawn, conn, db_dsn, queue):
    conn.execute("SELECT taskforge.tf_set_queue_limit(%s, 2)", (queue,))
    workers = [spawn.worker("--queue", queue, "--concurrency", "4", name=f"{queue}-w{i}") for i in range(2)]
    for w in workers:
        wait_registered(conn, w)
    stop, seen = threading.Event(), [0]

    def monitor() -> None:
        with psycopg.connect(db_dsn, autocommit=True) as c:
            while not stop.is_set():
                n = c.execute("SELECT running FROM taskforge.tf_queues WHERE queue = %s", (queue,)).fetchone()
                seen[0] = max(seen[0], n[0] if n else 0)

    watcher = threading.Thread(target=monitor, daemon=True)
    watcher.start()
    try:
        ids = [submit(conn, "sleep", {"ms": 150}, queue=queue) for _ in range(16)]
        wait_for(lambda: all_in(conn, ids, {"SUCCEEDED"}), timeout=LONG, message="all tasks to succeed", procs=workers)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert seen[0] == 2, f"at most 2 RUNNING, and the 8 slots do reach 2; saw {seen[0]}"


def test_a_paused_queue_waits_and_runs_at_once_after_resume(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, name=f"{queue}-w")
    wait_registered(conn, worker)
    assert conn.execute("SELECT taskforge.tf_pause_queue(%s)", (queue,)).fetchone()[0] is True
    ids = [submit(conn, "noop", queue=queue) for _ in range(3)]
    time.sleep(2.0)  # two poll intervals of an idle worker: nothing may be claimed meanwhile
    assert all_in(conn, ids, {"QUEUED"})
    resumed_at = time.monotonic()
    conn.execute("SELECT taskforge.tf_resume_queue(%s)", (queue,))
    wait_for(lambda: all_in(conn, ids, {"SUCCEEDED"}), timeout=LONG, message="the resumed tasks", procs=[worker])
    print(f"resume to all succeeded: {time.monotonic() - resumed_at:.3f} s")
