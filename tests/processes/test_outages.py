"""Workers under hostile conditions: killed connections and a wrong local clock."""

from __future__ import annotations

import datetime as dt
import glob
import re

import pytest

from itest_support import all_in, attempts, history, states, submit, task, wait_for, wait_log, wait_registered

pytestmark = pytest.mark.timeout(300)

# Connections of this test's workers: opened after the test started (killed processes of
# earlier tests may leave a backend behind for a moment).
WORKER_CONNECTIONS = """
SELECT application_name, count(*)
  FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE 'taskforge-worker/%%'
   AND backend_start > %(since)s
 GROUP BY application_name
"""


def worker_connections(conn, since) -> dict[str, int]:
    return dict(conn.execute(WORKER_CONNECTIONS, {"since": since}).fetchall())


def test_workers_reconnect_after_every_connection_is_terminated(spawn, conn, queue):
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    spawn.scheduler()
    # A long poll interval: after the outage only a re-subscribed listener can pick up new work fast.
    workers = [
        spawn.worker(
            "--queue",
            queue,
            "--concurrency",
            "2",
            "--lease-seconds",
            "3",
            "--poll-seconds",
            "300",
            "--heartbeat-seconds",
            "1",
            name=f"{queue}-w{i}",
        )
        for i in range(2)
    ]
    for worker in workers:
        wait_registered(conn, worker)
    task_ids = [submit(conn, "sleep", {"ms": 1200}, queue=queue) for _ in range(24)]
    expected = {
        "taskforge-worker/work": 2,
        "taskforge-worker/renew": 2,
        "taskforge-worker/heartbeat": 2,
        "taskforge-worker/listen": 2,
    }
    wait_for(lambda: worker_connections(conn, since) == expected, message=f"connections {expected}", procs=workers)
    wait_for(
        lambda: list(states(conn, task_ids).values()).count("SUCCEEDED") >= 4,
        message="a few tasks to finish",
        procs=workers,
    )

    terminated = conn.execute(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND application_name LIKE 'taskforge-worker/%%' "
        "AND backend_start > %(since)s",
        {"since": since},
    ).fetchone()[0]
    assert terminated == 8

    wait_for(lambda: all_in(conn, task_ids, {"SUCCEEDED"}), message="every task to succeed", procs=workers)
    # Every lost call was repeated on a new connection; a claim whose reply was lost can leave an
    # abandoned attempt, but every task ends with exactly one success.
    for task_id in task_ids:
        seen = history(conn, task_id)
        assert seen[-1] == "SUCCEEDED" and set(seen[:-1]) <= {"ABANDONED"}, (task_id, seen)

    # The listeners came back on fresh connections and are subscribed again: with a 300 s poll
    # interval, new work is only picked up this soon through a notification.
    wait_for(
        lambda: worker_connections(conn, since).get("taskforge-worker/listen") == 2,
        message="both listeners to reconnect",
        procs=workers,
    )
    for worker in workers:
        wait_log(worker, "listener re-subscribed")
    late = [submit(conn, "noop", queue=queue) for _ in range(4)]
    wait_for(lambda: all_in(conn, late, {"SUCCEEDED"}), timeout=60, message="new work after the outage", procs=workers)
    for worker in workers:
        assert worker.alive()
        log = worker.log()
        assert "reconnected to the database" in log
        assert "heartbeat restored" in log or "heartbeat failed" not in log


def faketime_library() -> str:
    found = sorted(
        glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
        + glob.glob("/usr/lib/faketime/libfaketime.so.1")
        + glob.glob("/usr/local/lib/faketime/libfaketime.so.1")
    )
    if not found:
        pytest.fail(
            "libfaketime is not installed (Debian: apt-get install faketime; `make test` does it as root)",
            pytrace=False,
        )
    return found[0]


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z ", re.M)


@pytest.mark.parametrize("offset_hours", [-3, 3])
def test_worker_with_a_wrong_local_clock_behaves_the_same(spawn, conn, queue, offset_hours):
    spawn.scheduler()
    # libfaketime shifts the wall clock only. The monotonic clock stays real
    # (FAKETIME_DONT_FAKE_MONOTONIC=1): the worker measures intervals with it.
    env = {"LD_PRELOAD": faketime_library(), "FAKETIME": f"{offset_hours:+d}h", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    worker = spawn.worker("--queue", queue, "--concurrency", "2", "--lease-seconds", "1.5", name=f"{queue}-w", env=env)
    wait_registered(conn, worker)
    db_now = conn.execute("SELECT clock_timestamp()").fetchone()[0]

    # The worker really lives 3 hours off: its log timestamps come from its wall clock.
    first = LOG_TIME.search(worker.log())
    assert first, worker.log()
    local = dt.datetime.fromisoformat(first.group(1)).replace(tzinfo=dt.UTC)
    skew_hours = (local - db_now).total_seconds() / 3600
    assert abs(skew_hours - offset_hours) < 0.1, f"worker clock is {skew_hours:.3f} h off, expected {offset_hours}"

    # Leases of 1.5 s, handlers of 3.5 s: they finish only if the renewals (every 0.5 s by the
    # monotonic clock) keep the leases alive by database time.
    task_ids = [submit(conn, "sleep", {"ms": 3500}, queue=queue) for _ in range(4)]
    wait_for(lambda: all_in(conn, task_ids, {"SUCCEEDED", "FAILED"}), message="the tasks to end", procs=[worker])
    for task_id in task_ids:
        assert history(conn, task_id) == ["SUCCEEDED"], attempts(conn, task_id)
        assert task(conn, task_id)["attempt_count"] == 1
    assert "lease lost" not in worker.log()
