"""Flow control with a real worker process: issue 18's rate-limit acceptance.

A rate limit of 20/s with a burst of 5 on one key, 8 worker slots and more tasks than the bucket
holds: no window of one second (each window starting at an attempt's start, database time) holds
more than 5 + 20 * 1 = 25 starts of the key's tasks, and all of them still run. A concurrency key
with a limit of 2 under the same worker never has more than 2 RUNNING (the invariant view, which
knows that rule, stays empty while a monitor watches).
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from taskforge import client

from itest_support import wait_for, wait_registered

pytestmark = pytest.mark.timeout(300)

PER_SECOND, BURST, TASKS = 20.0, 5, 80


def _starts(conn, task_ids: list[int]) -> list[float]:
    rows = conn.execute(
        "SELECT extract(epoch FROM started_at)::float8 FROM taskforge.attempts"
        " WHERE task_id = ANY(%s) ORDER BY started_at",
        (task_ids,),
    ).fetchall()
    return [r[0] for r in rows]


def _most_in_window(starts: list[float], seconds: float) -> int:
    """The most starts in any window [s, s + seconds] that begins at a start."""
    most, j = 0, 0
    for i, s in enumerate(starts):
        while j < len(starts) and starts[j] <= s + seconds:
            j += 1
        most = max(most, j - i)
    return most


def test_rate_limit_20_per_second_burst_5_with_8_slots_never_exceeds_25_starts_in_a_second(spawn, conn, queue):
    key = f"{queue}-rate"
    client.set_rate_limit(conn, key, PER_SECOND, BURST)
    ids = [
        s.task_id for s in client.submit_many(conn, [{"task_type": "noop", "queue": queue, "rate_key": key}] * TASKS)
    ]
    worker = spawn.worker("--queue", queue, "--concurrency", "8", "--poll-seconds", "0.05")
    wait_registered(conn, worker)
    wait_for(
        lambda: (
            conn.execute(
                "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = 'SUCCEEDED'", (ids,)
            ).fetchone()[0]
            == TASKS
        ),
        message="every rate-limited task to succeed",
        procs=[worker],
    )
    starts = _starts(conn, ids)
    assert len(starts) == TASKS
    assert _most_in_window(starts, 1.0) <= BURST + PER_SECOND * 1.0
    assert _most_in_window(starts, 0.25) <= BURST + PER_SECOND * 0.25
    # The limit, not the worker, set the pace: the run took at least (TASKS - BURST) / PER_SECOND.
    assert starts[-1] - starts[0] >= (TASKS - BURST) / PER_SECOND - 0.05
    assert client.invariant_violations(conn) == []


def test_concurrency_key_limit_holds_under_a_worker_with_8_slots(spawn, conn, db_dsn, queue):
    key = f"{queue}-ck"
    client.set_concurrency_limit(conn, key, 2)
    requests = [{"task_type": "sleep", "payload": {"ms": 100}, "queue": queue, "concurrency_key": key}] * 30
    ids = [s.task_id for s in client.submit_many(conn, requests)]
    stop, seen = threading.Event(), [0]

    def monitor() -> None:
        with psycopg.connect(db_dsn, autocommit=True) as c:
            while not stop.is_set():
                n = c.execute(
                    "SELECT count(*) FROM taskforge.tasks WHERE concurrency_key = %s AND state = 'RUNNING'", (key,)
                ).fetchone()[0]
                seen[0] = max(seen[0], n)

    watcher = threading.Thread(target=monitor, daemon=True)
    watcher.start()
    try:
        worker = spawn.worker("--queue", queue, "--concurrency", "8", "--poll-seconds", "0.05")
        wait_registered(conn, worker)
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = 'SUCCEEDED'", (ids,)
                ).fetchone()[0]
                == len(ids)
            ),
            message="every keyed task to succeed",
            procs=[worker],
        )
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert seen[0] == 2, f"the monitor saw at most {seen[0]} RUNNING (limit 2; 1 would mean it saw no overlap)"
    assert client.invariant_violations(conn) == []
