"""tf_enqueue_periodic called from several connections at the same moment (threading.Barrier):
every due tick is enqueued exactly once, and handling the same ticks again creates nothing.

The schedules are committed (each thread has its own connection), so the test removes them at
the end; their tasks stay in a queue of their own.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg

from taskforge import client

from sqlcore_helpers import unique_name

BARRIER_TIMEOUT = 60
THREADS = 8
SCHEDULES = 300


def _enqueue_until_nothing_due(dsn: str, barrier: threading.Barrier, max_tasks: int) -> list[tuple[str, int]]:
    """Call tf_enqueue_periodic until a call handles nothing; return (name, task_id) per tick."""
    handled: list[tuple[str, int]] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        barrier.wait(timeout=BARRIER_TIMEOUT)
        while True:
            enqueued, names, task_ids = c.execute(
                "SELECT enqueued, names, task_ids FROM taskforge.tf_enqueue_periodic(max_tasks => %s)", (max_tasks,)
            ).fetchone()
            if not enqueued:
                return handled
            handled.extend(zip(names, task_ids, strict=True))


def _run_round(dsn: str) -> list[list[tuple[str, int]]]:
    barrier = threading.Barrier(THREADS)
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(_enqueue_until_nothing_due, dsn, barrier, 7) for _ in range(THREADS)]
        return [f.result(timeout=300) for f in futures]


def test_concurrent_schedulers_enqueue_each_tick_once(db_dsn, conn):
    prefix = unique_name("pc")
    queue = unique_name("periodicq")
    names = [f"{prefix}-{i}" for i in range(SCHEDULES)]
    try:
        for name in names:
            client.schedule_periodic(conn, name, "0 0 1 1 *", "noop", {"name": name}, queue=queue)
        # Every schedule missed its New Year tick (no scheduler ran): all are due at once.
        conn.execute(
            "UPDATE taskforge.periodic_schedules SET next_fire_at = '2026-01-01 00:00+00' WHERE name LIKE %s",
            (prefix + "-%",),
        )
        per_thread = _run_round(db_dsn)
        handled = [pair for pairs in per_thread for pair in pairs]
        assert sorted(name for name, _ in handled) == sorted(names), "each schedule handled exactly once"
        assert len({task_id for _, task_id in handled}) == SCHEDULES, "one task per tick"
        assert sum(1 for pairs in per_thread if pairs) >= 2, "the callers did not overlap at all"
        tasks = dict(
            conn.execute("SELECT payload->>'name', task_id FROM taskforge.tasks WHERE queue = %s", (queue,)).fetchall()
        )
        assert tasks == dict(handled), "the tasks in the table are exactly those reported"
        schedules = {r.name: r for r in client.list_periodic(conn) if r.name in tasks}
        assert {n: r.last_task_id for n, r in schedules.items()} == tasks
        ticks = {r.last_fire_at for r in schedules.values()}
        assert len(ticks) == 1, ticks

        # The same ticks due again (a restored backup, a DBA): the idempotency key replays them.
        conn.execute(
            "UPDATE taskforge.periodic_schedules SET next_fire_at = last_fire_at, last_fire_at = NULL, "
            "last_task_id = NULL WHERE name LIKE %s",
            (prefix + "-%",),
        )
        replayed = [pair for pairs in _run_round(db_dsn) for pair in pairs]
        assert sorted(replayed) == sorted(handled), "every tick resolves to its first task"
        assert (
            conn.execute("SELECT count(*) FROM taskforge.tasks WHERE queue = %s", (queue,)).fetchone()[0] == SCHEDULES
        )
    finally:
        for name in names:
            client.unschedule_periodic(conn, name)
