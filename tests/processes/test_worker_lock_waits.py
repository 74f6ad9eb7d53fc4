"""A client transaction that holds a task's row lock must cost the worker that task at most.

The worker renews with tf_renew_many and finalizes with tf_finalize_and_claim, which skip a task
row locked by another transaction (SKIP LOCKED) and report it busy instead of waiting: that
element is sent again soon, while the other tasks' renewals, the claims and the other
finalizes carry on in the same statements.

The tests hold the lock from a connection of their own and release it when a condition is
observed (database time, log lines), never after a fixed sleep.
"""

from __future__ import annotations

import psycopg
import pytest

from itest_support import attempts, history, submit, task, wait_for, wait_log, wait_registered, wait_running

pytestmark = pytest.mark.timeout(300)

LEASE_EXPIRED = "SELECT lease_expires_at < clock_timestamp() FROM taskforge.tasks WHERE task_id = %s"
SECONDS_SINCE = "SELECT extract(epoch FROM clock_timestamp() - %s::timestamptz)::float8"
DB_NOW = "SELECT clock_timestamp()"


def lease_alive(conn: psycopg.Connection, task_id: int) -> bool:
    """Attempt 1 is RUNNING and its lease is in the future (database time)."""
    return conn.execute(
        "SELECT state = 'RUNNING' AND attempt_count = 1 AND lease_expires_at > clock_timestamp() "
        "FROM taskforge.tasks WHERE task_id = %s",
        (task_id,),
    ).fetchone()[0]


def hold_row_lock(db_dsn: str, task_id: int, how: str) -> psycopg.Connection:
    """Open a transaction that holds the task's row lock; the caller rolls it back."""
    blocker = psycopg.connect(db_dsn, application_name="taskforge-test/blocker")
    if how == "tf_cancel":
        # What a client does when it cancels inside a longer transaction.
        row = blocker.execute(
            "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %s)", (task_id,)
        ).fetchone()
        assert row == ("RUNNING", True)
    else:
        blocker.execute("SELECT 1 FROM taskforge.tasks WHERE task_id = %s FOR UPDATE", (task_id,))
    return blocker


def test_a_row_lock_held_past_the_lease_costs_only_that_tasks_lease(spawn, conn, db_dsn, queue):
    spawn.scheduler()
    # The reviewer's setup (lease 3 s, four long tasks) plus a spare slot: once the blocked task
    # is requeued, this same worker runs its next attempt while the old handler still runs.
    worker = spawn.worker("--queue", queue, "--concurrency", "5", "--lease-seconds", "3", name=f"{queue}-w")
    wait_registered(conn, worker)
    task_ids = [submit(conn, "sleep", {"ms": 12000}, queue=queue) for _ in range(4)]
    for task_id in task_ids:
        wait_running(conn, task_id, 1, procs=[worker])
    blocked, others = task_ids[0], task_ids[1:]

    blocker = hold_row_lock(db_dsn, blocked, "tf_cancel")
    try:
        held_since = conn.execute(DB_NOW).fetchone()[0]
        # Hold the lock until the blocked task's lease has run out and more than a whole lease
        # (3 s of database time) has passed: without the lock_timeout, every renewal queued
        # behind the blocked one would have missed its deadline by then.
        wait_for(
            lambda: (
                conn.execute(LEASE_EXPIRED, (blocked,)).fetchone()[0]
                and conn.execute(SECONDS_SINCE, (held_since,)).fetchone()[0] > 4.0
            ),
            message="the blocked task's lease to expire and 4 s to pass",
            procs=[worker],
        )
        # The other three are still RUNNING on their first attempt, their leases extended
        # (12 s handlers; unless the machine stalled that long, they cannot have ended yet).
        for task_id in others:
            row = task(conn, task_id)
            assert lease_alive(conn, task_id) or (row["state"], history(conn, task_id)) == (
                "SUCCEEDED",
                ["SUCCEEDED"],
            ), (task_id, row, attempts(conn, task_id))
        wait_log(worker, f"renewal of task {blocked} attempt 1 found the task's row locked")
    finally:
        blocker.rollback()
        blocker.close()

    # The blocked task lost its lease while nobody could touch its row: per the contract its
    # attempt 1 is ABANDONED (the scheduler recovers it once the lock is gone) and attempt 2 runs,
    # renewed on its own although attempt 1's handler on the same worker ends in the meantime.
    wait_for(
        lambda: (
            task(conn, blocked)["state"] == "SUCCEEDED" and all(task(conn, t)["state"] == "SUCCEEDED" for t in others)
        ),
        message="every task to succeed",
        procs=[worker],
    )
    for task_id in others:
        assert history(conn, task_id) == ["SUCCEEDED"], (task_id, attempts(conn, task_id))
    rows = attempts(conn, blocked)
    assert [(a["attempt_number"], a["state"]) for a in rows] == [(1, "ABANDONED"), (2, "SUCCEEDED")], rows
    assert rows[0]["outcome"] == "lease_expired"
    assert task(conn, blocked)["cancel_requested"] is False  # the cancel was rolled back
    log = worker.log()
    for task_id in others:
        assert f"lease lost for task {task_id} " not in log
        assert f"renewal of task {task_id} attempt 1 found" not in log
    # Attempt 1's handler ran on (the lease is the database's call) and its late result was refused.
    assert f"did not accept the succeeded outcome of task {blocked} attempt 1" in log


def test_a_row_lock_released_before_the_lease_ends_costs_nothing(spawn, conn, db_dsn, queue):
    spawn.scheduler()
    worker = spawn.worker("--queue", queue, "--concurrency", "3", "--lease-seconds", "6", name=f"{queue}-w")
    wait_registered(conn, worker)
    task_ids = [submit(conn, "sleep", {"ms": 8000}, queue=queue) for _ in range(3)]
    for task_id in task_ids:
        wait_running(conn, task_id, 1, procs=[worker])
    blocked = task_ids[0]

    blocker = hold_row_lock(db_dsn, blocked, "for_update")
    try:
        # The next renewal (every 2 s) finds the row busy and is retried soon; release the lock
        # as soon as the worker reports that (lease 6 s: plenty left).
        wait_log(worker, f"renewal of task {blocked} attempt 1 found the task's row locked")
        assert lease_alive(conn, blocked)
    finally:
        blocker.rollback()
        blocker.close()
    # The next try (or a later one, on a slow machine) renews the lease.
    wait_log(worker, f"renewed task {blocked} attempt 1 after ")
    line = next(x for x in worker.log().splitlines() if f"renewed task {blocked} attempt 1 after " in x)
    assert line.endswith("busy renewal(s)"), line

    wait_for(
        lambda: all(task(conn, t)["state"] == "SUCCEEDED" for t in task_ids),
        message="every task to succeed",
        procs=[worker],
    )
    for task_id in task_ids:
        assert history(conn, task_id) == ["SUCCEEDED"], (task_id, attempts(conn, task_id))
    assert "lease lost" not in worker.log()


def test_a_blocked_finalize_does_not_stop_claims_or_other_finalizes(spawn, conn, db_dsn, queue):
    # Lease 60 s: the blocked task keeps its lease for the whole test (its renewals are busy
    # too, and retried).
    worker = spawn.worker("--queue", queue, "--concurrency", "2", "--lease-seconds", "60", name=f"{queue}-w")
    wait_registered(conn, worker)
    first = submit(conn, "sleep", {"ms": 1500}, queue=queue)
    wait_running(conn, first, 1, procs=[worker])

    blocker = hold_row_lock(db_dsn, first, "for_update")
    try:
        # Its handler ends; its finalize finds the row busy and waits to be sent again.
        wait_log(worker, f"finalize of task {first} attempt 1 found the task's row locked", timeout=40)
        # Meanwhile the same worker claims, runs and finalizes other tasks (through its free slot).
        later = [submit(conn, "echo", {"n": i}, queue=queue) for i in range(3)]
        wait_for(
            lambda: all(task(conn, t)["state"] == "SUCCEEDED" for t in later),
            timeout=40,
            message="the later tasks to succeed while the lock is held",
            procs=[worker],
        )
        assert history(conn, first) == ["RUNNING"]
        assert lease_alive(conn, first)
    finally:
        blocker.rollback()
        blocker.close()

    # Retried with the same owner and attempt, it now goes through.
    wait_for(lambda: task(conn, first)["state"] == "SUCCEEDED", message="the blocked task to succeed", procs=[worker])
    rows = attempts(conn, first)
    assert [(a["attempt_number"], a["state"], a["result"]) for a in rows] == [(1, "SUCCEEDED", {"slept_ms": 1500})]
    for i, task_id in enumerate(later):
        assert history(conn, task_id) == ["SUCCEEDED"] and task(conn, task_id)["result"] == {"n": i}
    assert "lease lost" not in worker.log()
    assert worker.alive()


# --- in-process: the connections behind it ---------------------------------------------------------


def test_work_and_renew_connections_have_a_lock_timeout_derived_from_the_lease(db_dsn):
    from psycopg.conninfo import make_conninfo

    from taskforge.worker import Worker, WorkerConfig

    assert WorkerConfig(lease_seconds=3).lock_timeout_seconds == pytest.approx(0.3)
    assert WorkerConfig().lock_timeout_seconds == 1.0  # 30 s lease: capped at 1 s
    # The DSN's own options are kept; the worker's lock_timeout/statement_timeout come last and win.
    dsn = make_conninfo(db_dsn, options="-c statement_timeout=45000 -c work_mem=5MB")
    worker = Worker(dsn, WorkerConfig(lease_seconds=3, concurrency=4))
    try:
        for lanes in (worker.work_db, worker.renew_db):
            row = (
                lanes.connection()
                .execute(
                    "SELECT current_setting('lock_timeout'), "
                    "current_setting('statement_timeout'), current_setting('work_mem')"
                )
                .fetchone()
            )
            assert row == ("300ms", "1s", "5MB"), (lanes.application_name, row)
        # The heartbeat's: min(1 s, heartbeat / 2) and min(heartbeat, 30 s) (heartbeat 5 s).
        assert worker.heartbeat_db.connection().execute(
            "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')"
        ).fetchone() == ("1s", "5s")
    finally:
        for db in (worker.work_db, worker.renew_db, worker.heartbeat_db):
            db.close()


def test_a_lock_timeout_is_raised_at_once_and_keeps_the_connection(db_dsn, conn, queue):
    from taskforge.worker import DbConnection, is_lock_timeout

    task_id = submit(conn, "noop", queue=queue)
    short = DbConnection(db_dsn, f"taskforge-test/{queue}", lock_timeout=0.05)
    blocker = hold_row_lock(db_dsn, task_id, "for_update")
    try:
        pid = short.execute("SELECT pg_backend_pid()")[0][0]
        with pytest.raises(psycopg.Error) as failure:
            short.execute("SELECT 1 FROM taskforge.tasks WHERE task_id = %s FOR UPDATE", (task_id,), retry=lambda: True)
        assert is_lock_timeout(failure.value) and failure.value.sqlstate == "55P03"
        assert short.execute("SELECT pg_backend_pid()")[0][0] == pid
    finally:
        blocker.rollback()
        blocker.close()
        short.close()
