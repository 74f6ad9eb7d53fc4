"""Flow control under concurrent claimers (tf_set_rate_limit, tf_set_concurrency_limit, ordering keys,
fair claiming; the claim's keyed pick, taskforge._tf_claim_keyed).

Eight connections claim and finish keyed tasks of one queue as fast as they can (run_claimers, as
in test_queue_limits.py) while monitor connections poll the live counts in tight loops:

* a rate key (20 per second, burst 5): in every window of T seconds that starts at a start, at most
  burst + 20 * T of the attempts' started_at (T = 1 s and 0.25 s), and the limit is nearly reached;
* a concurrency key limited to 3: never more than 3 RUNNING (a key without a limit, claimed in the
  same run, shows more: the monitor would see a breach) and tf_invariant_violations stays empty;
* an ordering key: never two RUNNING, attempts start in task id order, each after the previous
  one finished;
* fairness, one claimer: 10 tasks of key B submitted after 2000 of key A all start within 25 claims.

Every test uses its own queue and key names and cancels what it leaves QUEUED.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timedelta

import psycopg
import pytest

from sqlcore_helpers import Listener, claim, finalize, invariant_violations, register_worker, run_claimers, unique_name

CLAIMERS = 8
RATE = 20.0  # tokens per second
BURST = 5
RATE_RUN_SECONDS = 4.0
RUNNING_OF_CONCURRENCY_KEY = "SELECT count(*) FROM taskforge.tasks WHERE concurrency_key = %s AND state = 'RUNNING'"
RUNNING_OF_ORDERING_KEY = "SELECT count(*) FROM taskforge.tasks WHERE ordering_key = %s AND state = 'RUNNING'"
VIOLATIONS = "SELECT count(*) FROM taskforge.tf_invariant_violations"


@pytest.fixture()
def flow_queue(conn):
    """A queue no other test uses; whatever of it is still QUEUED at the end is cancelled, so that
    no keyed task is left due for later tests (db/tests/_tf_claim_keyed/test_no_keyed.sql)."""
    queue = unique_name("flowq")
    yield queue
    conn.execute(
        "SELECT taskforge.tf_cancel(s.task_id)"
        "  FROM (SELECT task_id FROM taskforge.tasks WHERE queue = %s AND state IN ('QUEUED', 'RETRYING')) s",
        (queue,),
    )


def _submit_keyed(
    conn: psycopg.Connection,
    queue: str,
    n: int,
    rate_key: str | None = None,
    concurrency_key: str | None = None,
    ordering_key: str | None = None,
) -> list[int]:
    """Submit n due noop tasks with the given flow keys in one statement; returns their ids in order."""
    rows = conn.execute(
        "SELECT (taskforge.tf_submit(task_type => 'noop', queue => %(q)s, rate_key => %(r)s,"
        "                            concurrency_key => %(c)s, ordering_key => %(o)s)).task_id"
        "  FROM generate_series(1, %(n)s)",
        {"q": queue, "r": rate_key, "c": concurrency_key, "o": ordering_key, "n": n},
    ).fetchall()
    return [r[0] for r in rows]


def _starts(conn: psycopg.Connection, queue: str) -> list[datetime]:
    """started_at of every attempt of the queue's tasks, ascending (database time)."""
    rows = conn.execute(
        "SELECT a.started_at FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id)"
        " WHERE t.queue = %s ORDER BY a.started_at",
        (queue,),
    ).fetchall()
    return [r[0] for r in rows]


def _most_in_a_window(starts: list[datetime], seconds: float) -> tuple[int, datetime | None]:
    """The largest number of starts within [s, s + seconds] over every start s (sorted input), and
    that window's s. Starts that share a timestamp are all inside the window that begins there."""
    width = timedelta(seconds=seconds)
    best, at, end = 0, None, 0
    for i, start in enumerate(starts):
        while end < len(starts) and starts[end] <= start + width:
            end += 1
        if end - i > best:
            best, at = end - i, start
    return best, at


def test_a_rate_limit_holds_in_every_window_under_concurrent_claimers(db_dsn, conn, flow_queue):
    key = unique_name("rk")
    # More than the run can start (burst + RATE * RATE_RUN_SECONDS = 85): the limit, not the
    # backlog, decides.
    _submit_keyed(conn, flow_queue, 200, rate_key=key)
    conn.execute("SELECT * FROM taskforge.tf_set_rate_limit(%s, %s, %s)", (key, RATE, BURST))
    finished, _ = run_claimers(db_dsn, flow_queue, {}, claimers=CLAIMERS, max_tasks=3, duration=RATE_RUN_SECONDS)
    starts = _starts(conn, flow_queue)
    assert finished == len(starts)
    for seconds in (1.0, 0.25):
        most, at = _most_in_a_window(starts, seconds)
        assert most <= BURST + RATE * seconds, f"{most} starts in the {seconds} s from {at}"
    # Throughput close to the limit: at least 60 % of RATE over the run.
    assert len(starts) >= 0.6 * RATE * RATE_RUN_SECONDS, f"only {len(starts)} starts in {RATE_RUN_SECONDS} s"
    assert len(starts) <= BURST + RATE * (starts[-1] - starts[0]).total_seconds()
    assert invariant_violations(conn) == []


@pytest.mark.parametrize("max_tasks", [1, 3])
def test_a_concurrency_key_never_runs_more_than_its_limit(db_dsn, conn, flow_queue, max_tasks):
    limited, free = unique_name("ck"), unique_name("ckfree")
    _submit_keyed(conn, flow_queue, 60, concurrency_key=limited)
    _submit_keyed(conn, flow_queue, 60, concurrency_key=free)
    assert conn.execute("SELECT taskforge.tf_set_concurrency_limit(%s, 3)", (limited,)).fetchone()[0] is None
    finished, seen = run_claimers(
        db_dsn,
        flow_queue,
        {
            "limited": (RUNNING_OF_CONCURRENCY_KEY, (limited,)),
            "free": (RUNNING_OF_CONCURRENCY_KEY, (free,)),
            "violations": (VIOLATIONS, ()),
        },
        claimers=CLAIMERS,
        max_tasks=max_tasks,
        # Long enough that the key without a limit gets well over 3 RUNNING even though claimers
        # of one key collide on its first tasks (a claim of one that finds them locked gets none),
        # and even on a busy 2-core machine where a claimer's next claim may come late.
        hold_seconds=0.1,
    )
    assert finished == 120
    assert 1 <= seen["limited"] <= 3
    assert seen["free"] > 3, "the key without a limit, in the same run, shows the monitor would see a breach"
    assert seen["violations"] == 0
    assert invariant_violations(conn) == []


def test_an_ordering_key_runs_its_tasks_one_at_a_time_in_id_order(db_dsn, conn, flow_queue):
    key = unique_name("ok")
    ids = _submit_keyed(conn, flow_queue, 50, ordering_key=key)
    finished, seen = run_claimers(
        db_dsn,
        flow_queue,
        {"running": (RUNNING_OF_ORDERING_KEY, (key,)), "violations": (VIOLATIONS, ())},
        claimers=CLAIMERS,
        max_tasks=3,
    )
    assert finished == 50
    assert seen["running"] == 1
    assert seen["violations"] == 0
    attempts = conn.execute(
        "SELECT a.task_id, a.attempt_number, a.state::text, a.started_at, a.finished_at"
        "  FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id)"
        " WHERE t.ordering_key = %s ORDER BY a.started_at, a.task_id",
        (key,),
    ).fetchall()
    assert [a[0] for a in attempts] == sorted(ids), "attempts started in task id order"
    assert {(a[1], a[2]) for a in attempts} == {(1, "SUCCEEDED")}
    for previous, following in itertools.pairwise(attempts):
        assert following[3] >= previous[4], f"task {following[0]} started before task {previous[0]} finished"


@pytest.fixture()
def listener(db_dsn):
    lst = Listener(db_dsn)
    yield lst
    lst.close()


def test_the_end_of_an_ordering_key_task_wakes_the_queue_of_its_next_task(db_dsn, conn, flow_queue, listener):
    """The next task of a key becomes claimable when its predecessor ends, on any path (finalize,
    cancel): that transaction wakes the next task's queue, once, at commit; an end that frees
    nothing (the key's last task, a later task while an earlier one waits) wakes nobody."""
    worker_id = register_worker(conn, "ordering-wake", [flow_queue])
    first, second = _submit_keyed(conn, flow_queue, 2, ordering_key=unique_name("okw"))
    listener.drain()

    (row,) = claim(conn, worker_id, [flow_queue], max_tasks=5)
    assert row[0] == first, "only the head of the key is claimable"
    with psycopg.connect(db_dsn) as tx:  # the wake-up goes out at commit, not before
        assert finalize(tx, first, worker_id, row[1], "succeeded")[:2] == (True, "SUCCEEDED")
        assert flow_queue not in listener.drain()
        tx.commit()
    assert listener.drain().count(flow_queue) == 1, "the predecessor's end woke the queue"
    (row,) = claim(conn, worker_id, [flow_queue], max_tasks=5)
    assert row[0] == second
    assert finalize(conn, second, worker_id, row[1], "failed")[:2] == (True, "FAILED")
    assert flow_queue not in listener.drain(), "the key's last task frees nothing"

    # A waiting head cancelled: its successor is next. A later task cancelled: nothing moves.
    head, middle, last = _submit_keyed(conn, flow_queue, 3, ordering_key=unique_name("okc"))
    listener.drain()
    conn.execute("SELECT taskforge.tf_cancel(%s)", (last,))
    assert flow_queue not in listener.drain(), "a later task's end while earlier ones wait"
    conn.execute("SELECT taskforge.tf_cancel(%s)", (head,))
    assert listener.drain().count(flow_queue) == 1, "the head's cancel woke the queue"
    (row,) = claim(conn, worker_id, [flow_queue], max_tasks=5)
    assert row[0] == middle
    with psycopg.connect(db_dsn) as tx:
        assert finalize(tx, middle, worker_id, row[1], "succeeded")[0]
        tx.rollback()
    assert flow_queue not in listener.drain(), "a rolled-back end wakes nobody"
    assert finalize(conn, middle, worker_id, row[1], "succeeded")[0]
    assert invariant_violations(conn) == []


def test_a_small_key_is_served_within_a_few_claims_of_a_large_backlog(db_dsn, conn, flow_queue):
    big, small = unique_name("ckbig"), unique_name("cksmall")
    _submit_keyed(conn, flow_queue, 2000, concurrency_key=big)
    small_ids = _submit_keyed(conn, flow_queue, 10, concurrency_key=small)
    worker = register_worker(conn, "fair-claimer", [flow_queue])
    started = []
    began = time.monotonic()
    for _ in range(25):
        (row,) = claim(conn, worker, [flow_queue])
        started.append(row[0])
        assert finalize(conn, row[0], worker, row[1])[0]
    elapsed = time.monotonic() - began
    assert set(small_ids) <= set(started), f"B's tasks started at claims {[started.index(i) for i in small_ids]}"
    # A claim's cost follows the keys with work, not the 2000-task backlog.
    assert elapsed < 5, f"25 claims took {elapsed:.1f} s"
