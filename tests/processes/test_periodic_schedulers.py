"""Periodic schedules served by real scheduler processes: two schedulers side by side enqueue
each tick of a ``* * * * *`` schedule exactly once (issue acceptance), a few milliseconds after
the minute, because a scheduler sleeps until the next tick.

The schedulers run with a 300 s max interval, so only the next tick reported by
tf_enqueue_periodic can wake them in time. The window spans two minute boundaries (about 1 to 2
minutes of wall time, waited for on the database clock). Several schedules are served at once,
so the two schedulers really compete for due rows (FOR UPDATE SKIP LOCKED) on every tick.
"""

from __future__ import annotations

import datetime as dt
import signal
import time

import pytest

from taskforge import client

from itest_support import wait_log

pytestmark = pytest.mark.timeout(300)

SCHEDULES = 8
#: How late after its minute a tick may be enqueued (seconds). The scheduler wakes 2 ms after
#: the tick; the rest is a loaded 2-core machine.
MAX_LATENESS = 2.0


def db_now(conn) -> dt.datetime:
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def test_two_schedulers_enqueue_one_task_per_minute(spawn, conn, queue):
    names = [f"{queue}-{i}" for i in range(SCHEDULES)]
    created = db_now(conn)
    try:
        for name in names:
            client.schedule_periodic(conn, name, "* * * * *", "noop", {"schedule": name}, queue=queue)
        # A long max interval: only the next tick (computed by the database) can wake them in time.
        schedulers = [spawn.scheduler("--max-interval-seconds", "300", name=f"{queue}-s{i}") for i in range(2)]
        for proc in schedulers:
            wait_log(proc, "scheduler started")
        start = db_now(conn)
        first = start.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        ticks = [first, first + dt.timedelta(minutes=1)]
        # Wait (on the database clock) until the second tick is past and has had time to be enqueued.
        while db_now(conn) < ticks[-1] + dt.timedelta(seconds=MAX_LATENESS + 1):
            for proc in schedulers:
                assert proc.alive(), f"scheduler {proc.name} exited:\n{proc.log()[-3000:]}"
            time.sleep(0.5)
        for proc in schedulers:
            proc.signal(signal.SIGTERM)
        assert [proc.wait(30) for proc in schedulers] == [0, 0]

        rows = conn.execute(
            "SELECT payload->>'schedule', scheduled_at, created_at, idempotency_key FROM taskforge.tasks "
            "WHERE queue = %s ORDER BY 1, 2",
            (queue,),
        ).fetchall()
        by_schedule: dict[str, list[dt.datetime]] = {}
        for name, scheduled_at, created_at, key in rows:
            by_schedule.setdefault(name, []).append(scheduled_at)
            assert key == f"periodic:{name}:{scheduled_at.astimezone(dt.UTC):%Y-%m-%dT%H:%M:%SZ}"
            lateness = (created_at - scheduled_at).total_seconds()
            assert 0 <= lateness < MAX_LATENESS, f"{name}: tick {scheduled_at} enqueued {lateness:.3f} s late"
        # Ticks before the window (the schedule was created just before it) are not counted.
        in_window = {n: [t for t in ts if t >= ticks[0]] for n, ts in by_schedule.items()}
        assert in_window == {name: ticks for name in names}, "every schedule: exactly one task per minute"
        assert all(t > created for ts in by_schedule.values() for t in ts), "no tick before the schedule existed"

        logged = sum(proc.log().count("periodic schedule ") for proc in schedulers)
        assert logged == len(rows), "each tick was enqueued (and logged) by exactly one scheduler"
        for row in client.list_periodic(conn):
            if row.name in names:
                assert row.last_fire_at == ticks[-1]
                assert row.next_fire_at > ticks[-1]
    finally:
        for name in names:
            client.unschedule_periodic(conn, name)
