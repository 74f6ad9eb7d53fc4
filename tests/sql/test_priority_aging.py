"""Priority aging under a sustained stream of higher priorities (tf_set_queue_aging, tf_claim).

A submitter keeps adding priority-10 tasks faster than one claimer finishes them, so the queue's
backlog grows the whole time. A priority-0 task submitted into it starts, with aging at 10
priority points per second, before every priority-10 task submitted more than (10 - 0) / 10 = 1 s
after it (the bound of tf_set_queue_aging's header), while the stream goes on. The same run on a
queue without aging shows the low task still waiting when the stream stops, which proves the
test would see a queue that does not age.
"""

from __future__ import annotations

import datetime as dt
import threading
import time

import psycopg

from sqlcore_helpers import claim, finalize, invariant_violations, register_worker, submit, unique_name

RATE = 10.0  # priority points per second of waiting
HIGH, LOW = 10, 0
STREAM_SECONDS = 4.0
SUBMIT_EVERY = 0.02  # 50 high tasks/s in, about 30/s out: the backlog grows
HOLD_SECONDS = 0.03


def _stream(db_dsn: str, queue: str, stop: threading.Event) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        while not stop.is_set():
            submit(c, queue, priority=HIGH)
            time.sleep(SUBMIT_EVERY)


def _claimer(db_dsn: str, queue: str, stop: threading.Event) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        worker_id = register_worker(c, f"aging-{queue}", [queue])
        while not stop.is_set():
            rows = claim(c, worker_id, [queue], lease_seconds=60)
            if not rows:
                time.sleep(0.005)
                continue
            time.sleep(HOLD_SECONDS)
            finalize(c, rows[0][0], worker_id, rows[0][1], "succeeded")


def _run(db_dsn: str, conn: psycopg.Connection, queue: str) -> tuple[int, dt.datetime]:
    """Stream for STREAM_SECONDS with one claimer; the low task goes in after 0.5 s. Returns
    the low task's id and when it was created (database time)."""
    stop = threading.Event()
    threads = [threading.Thread(target=f, args=(db_dsn, queue, stop), daemon=True) for f in (_stream, _claimer)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        low_id = submit(conn, queue, priority=LOW)[0]
        time.sleep(STREAM_SECONDS)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    created = conn.execute("SELECT created_at FROM taskforge.tasks WHERE task_id = %s", (low_id,)).fetchone()[0]
    return low_id, created


def test_a_low_priority_task_starts_within_the_aging_bound_under_a_stream_of_high_priorities(db_dsn, conn):
    queue = unique_name("agingq")
    assert conn.execute("SELECT taskforge.tf_set_queue_aging(%s, %s)", (queue, RATE)).fetchone()[0] is None
    low_id, low_created = _run(db_dsn, conn, queue)

    started = conn.execute(
        "SELECT started_at FROM taskforge.attempts WHERE task_id = %s AND attempt_number = 1", (low_id,)
    ).fetchone()
    assert started is not None, "the low-priority task never started"
    # No high task submitted more than (HIGH - LOW) / RATE seconds after it started before it.
    late_first = conn.execute(
        "SELECT count(*) FROM taskforge.tasks t JOIN taskforge.attempts a ON a.task_id = t.task_id"
        " WHERE t.queue = %s AND t.priority = %s AND a.attempt_number = 1 AND a.started_at < %s"
        "   AND t.created_at > %s + make_interval(secs => %s)",
        (queue, HIGH, started[0], low_created, (HIGH - LOW) / RATE),
    ).fetchone()[0]
    assert late_first == 0
    # The stream was a real one: high tasks were still waiting when the low one started.
    waiting_behind = conn.execute(
        "SELECT count(*) FROM taskforge.tasks WHERE queue = %s AND priority = %s AND created_at < %s"
        "   AND task_id NOT IN (SELECT task_id FROM taskforge.attempts WHERE started_at <= %s)",
        (queue, HIGH, started[0], started[0]),
    ).fetchone()[0]
    assert waiting_behind > 0
    assert invariant_violations(conn) == []


def test_without_aging_the_same_stream_starves_the_low_priority_task(db_dsn, conn):
    queue = unique_name("plainq")
    low_id, _ = _run(db_dsn, conn, queue)
    state = conn.execute("SELECT state FROM taskforge.tasks WHERE task_id = %s", (low_id,)).fetchone()[0]
    assert state == "QUEUED"
    assert invariant_violations(conn) == []
