"""The batch SQL API and row locks held by other sessions: what one pgTAP session cannot show.

tf_renew_many, tf_finalize_many and tf_finalize_and_claim lock the named tasks with
FOR UPDATE SKIP LOCKED: a task whose row another transaction holds is reported with reason
'busy' at once, never waited for, while the other elements are processed; a later call (after
the lock is released) handles it. Only a second session can hold such a lock, so these tests use
two psycopg connections: a "holder" that keeps a transaction open (SELECT ... FOR UPDATE, or an
uncommitted tf_cancel) and the caller, which runs with no lock_timeout at all (a
statement_timeout only turns a regression into a failure instead of a hang).

The last test runs several workers calling tf_finalize_and_claim in loops over a few hundred
tasks and checks that no task is ever claimed twice and tf_invariant_violations stays empty.
Every test uses its own queue names.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
from psycopg.types.json import Jsonb

from sqlcore_helpers import (
    claim,
    invariant_violations,
    register_worker,
    submit,
    submit_many,
    unique_name,
)

#: A call that skips a locked row returns in milliseconds; one that waited would hit this.
FAST = 0.5  # seconds
#: Safety net so that a call that does wait fails the test instead of hanging it (not a lock_timeout).
STATEMENT_TIMEOUT = "10s"
BARRIER_TIMEOUT = 60  # seconds

RENEW_MANY = """
SELECT task_id, attempt_number, renewed, lease_expires_at, cancel_requested, reason
  FROM taskforge.tf_renew_many(worker_id => %(worker_id)s, task_ids => %(task_ids)s::bigint[],
                               attempt_numbers => %(attempt_numbers)s::int[], lease_seconds => %(lease_seconds)s)"""
FINALIZE_MANY = """
SELECT task_id, attempt_number, accepted, task_state, reason
  FROM taskforge.tf_finalize_many(worker_id => %(worker_id)s, task_ids => %(task_ids)s::bigint[],
                                  attempt_numbers => %(attempt_numbers)s::int[], outcomes => %(outcomes)s::text[],
                                  results => %(results)s::jsonb[])"""
FINALIZE_AND_CLAIM = """
SELECT kind, task_id, attempt_number, accepted, task_state, reason, lease_expires_at
  FROM taskforge.tf_finalize_and_claim(worker_id => %(worker_id)s, task_ids => %(task_ids)s::bigint[],
                                       attempt_numbers => %(attempt_numbers)s::int[], outcomes => %(outcomes)s::text[],
                                       queues => %(queues)s::text[], lease_seconds => %(lease_seconds)s,
                                       max_tasks => %(max_tasks)s)"""


def caller(conn: psycopg.Connection) -> psycopg.Connection:
    """Prepare the calling connection: no lock_timeout (the point of the test), a statement_timeout
    as a safety net only."""
    conn.execute("SET lock_timeout = 0")
    conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
    assert conn.execute("SHOW lock_timeout").fetchone()[0] == "0"
    return conn


def timed(conn: psycopg.Connection, query: str, params: dict) -> tuple[list[tuple], float]:
    """Run query, return (rows, elapsed seconds on the monotonic clock)."""
    start = time.monotonic()
    rows = conn.execute(query, params).fetchall()
    return rows, time.monotonic() - start


def running_tasks(conn: psycopg.Connection, n: int, lease_seconds: float = 60) -> tuple[str, object, list[int]]:
    """A fresh queue with n tasks claimed by a fresh worker: (queue, worker_id, task_ids in claim order)."""
    queue = unique_name("lockq")
    submit_many(conn, queue, n)
    worker_id = register_worker(conn, "batch-locks", [queue])
    rows = claim(conn, worker_id, [queue], lease_seconds=lease_seconds, max_tasks=n)
    assert len(rows) == n
    return queue, worker_id, [r[0] for r in rows]


def task_row(conn: psycopg.Connection, task_id: int) -> tuple:
    """(state, lease_expires_at, owner_worker_id, attempt_count, result, cancel_requested_at) as committed."""
    return conn.execute(
        "SELECT state, lease_expires_at, owner_worker_id, attempt_count, result, cancel_requested_at"
        "  FROM taskforge.tasks WHERE task_id = %s",
        (task_id,),
    ).fetchone()


def lock_rows(holder: psycopg.Connection, task_ids: list[int]) -> None:
    """Open a transaction on holder that holds the rows of task_ids FOR UPDATE."""
    locked = holder.execute(
        "SELECT task_id FROM taskforge.tasks WHERE task_id = ANY(%s) FOR UPDATE", (task_ids,)
    ).fetchall()
    assert sorted(r[0] for r in locked) == sorted(task_ids)


# --- tf_renew_many ----------------------------------------------------------------------------------


def test_renew_many_reports_a_locked_row_busy_at_once(db_dsn, conn):
    caller(conn)
    _, worker_id, ids = running_tasks(conn, 3)
    before = task_row(conn, ids[1])
    params = {"worker_id": worker_id, "task_ids": ids, "attempt_numbers": [1, 1, 1], "lease_seconds": 120}

    with psycopg.connect(db_dsn) as holder:
        lock_rows(holder, [ids[1]])
        rows, elapsed = timed(conn, RENEW_MANY, params)
        assert elapsed < FAST, f"tf_renew_many waited {elapsed:.3f} s for a row lock"
        assert [(r[0], r[2], r[5]) for r in rows] == [
            (ids[0], True, None),
            (ids[1], False, "busy"),
            (ids[2], True, None),
        ]
        busy = rows[1]
        assert busy[1] == 1 and busy[3] is None, "a busy element returns no deadline"
        assert busy[4] is False, "cancel_requested of a busy element is as last committed"
        assert rows[0][3] == rows[2][3] and rows[0][3] is not None
        # The busy task's lease is unchanged and not lost; the others moved.
        assert task_row(conn, ids[1]) == before
        assert task_row(conn, ids[0])[1] == rows[0][3]
        holder.rollback()

    rows, elapsed = timed(conn, RENEW_MANY, params)
    assert [(r[2], r[5]) for r in rows] == [(True, None)] * 3, "after the lock is released the same call renews all"
    assert task_row(conn, ids[1])[1] == rows[1][3]
    assert elapsed < FAST
    assert invariant_violations(conn) == []


def test_renew_many_is_busy_while_a_tf_cancel_is_open(db_dsn, conn):
    caller(conn)
    _, worker_id, ids = running_tasks(conn, 2)
    params = {"worker_id": worker_id, "task_ids": ids, "attempt_numbers": [1, 1], "lease_seconds": 60}

    with psycopg.connect(db_dsn) as holder:
        state, requested = holder.execute(
            "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(%s, 'stop')", (ids[0],)
        ).fetchone()
        assert (state, requested) == ("RUNNING", True)
        rows, elapsed = timed(conn, RENEW_MANY, params)
        assert elapsed < FAST, f"tf_renew_many waited {elapsed:.3f} s behind an open tf_cancel"
        assert [(r[2], r[4], r[5]) for r in rows] == [(False, False, "busy"), (True, False, None)], (
            "the task being cancelled is busy (its request not yet committed); the other is renewed"
        )
        holder.commit()

    rows, _ = timed(conn, RENEW_MANY, params)
    assert [(r[2], r[4], r[5]) for r in rows] == [(True, True, None), (True, False, None)], (
        "once tf_cancel commits, the same call renews and reports the request"
    )
    assert invariant_violations(conn) == []


# --- tf_finalize_many -------------------------------------------------------------------------------


def test_finalize_many_reports_a_locked_row_busy_at_once(db_dsn, conn):
    caller(conn)
    _, worker_id, ids = running_tasks(conn, 3)
    before = task_row(conn, ids[1])
    params = {
        "worker_id": worker_id,
        "task_ids": ids,
        "attempt_numbers": [1, 1, 1],
        "outcomes": ["succeeded", "succeeded", "succeeded"],
        "results": [Jsonb({"n": 0}), Jsonb({"n": 1}), Jsonb({"n": 2})],
    }

    with psycopg.connect(db_dsn) as holder:
        lock_rows(holder, [ids[1]])
        rows, elapsed = timed(conn, FINALIZE_MANY, params)
        assert elapsed < FAST, f"tf_finalize_many waited {elapsed:.3f} s for a row lock"
        assert rows == [
            (ids[0], 1, True, "SUCCEEDED", None),
            (ids[1], 1, False, "RUNNING", "busy"),
            (ids[2], 1, True, "SUCCEEDED", None),
        ]
        assert task_row(conn, ids[1]) == before, "the busy task is untouched"
        assert conn.execute("SELECT state FROM taskforge.attempts WHERE task_id = %s", (ids[1],)).fetchone() == (
            "RUNNING",
        )
        assert task_row(conn, ids[0])[4] == {"n": 0}
        holder.rollback()

    rows, elapsed = timed(conn, FINALIZE_MANY, params)
    assert elapsed < FAST
    assert rows == [
        (ids[0], 1, False, "SUCCEEDED", "not_running"),
        (ids[1], 1, True, "SUCCEEDED", None),
        (ids[2], 1, False, "SUCCEEDED", "not_running"),
    ], "sent again after the lock is released: the busy element is accepted, the finished ones are harmless"
    assert task_row(conn, ids[1])[4] == {"n": 1}
    assert invariant_violations(conn) == []


def test_finalize_many_is_busy_while_a_tf_cancel_is_open(db_dsn, conn):
    caller(conn)
    _, worker_id, ids = running_tasks(conn, 1)
    params = {
        "worker_id": worker_id,
        "task_ids": ids,
        "attempt_numbers": [1],
        "outcomes": ["retryable"],
        "results": None,
    }

    with psycopg.connect(db_dsn) as holder:
        holder.execute("SELECT * FROM taskforge.tf_cancel(%s, 'stop')", (ids[0],))
        rows, elapsed = timed(conn, FINALIZE_MANY, params)
        assert elapsed < FAST
        assert rows == [(ids[0], 1, False, "RUNNING", "busy")]
        holder.commit()

    rows, _ = timed(conn, FINALIZE_MANY, params)
    assert rows == [(ids[0], 1, True, "CANCELLED", None)], (
        "after the cancel commits, a retryable failure ends CANCELLED"
    )
    assert invariant_violations(conn) == []


# --- tf_finalize_and_claim --------------------------------------------------------------------------


def test_finalize_and_claim_skips_locked_rows_in_both_parts(db_dsn, conn):
    caller(conn)
    queue, worker_id, ids = running_tasks(conn, 2)
    waiting = [submit(conn, queue, priority=p)[0] for p in (9, 5, 1)]  # claim order: waiting[0], [1], [2]
    params = {
        "worker_id": worker_id,
        "task_ids": ids,
        "attempt_numbers": [1, 1],
        "outcomes": ["succeeded", "failed"],
        "queues": [queue],
        "lease_seconds": 60,
        "max_tasks": 5,
    }

    with psycopg.connect(db_dsn) as holder:
        lock_rows(holder, [ids[0], waiting[0]])  # one task to finalize, the best task to claim
        rows, elapsed = timed(conn, FINALIZE_AND_CLAIM, params)
        assert elapsed < FAST, f"tf_finalize_and_claim waited {elapsed:.3f} s for a row lock"
        assert [r[:6] for r in rows] == [
            ("finalized", ids[0], 1, False, "RUNNING", "busy"),
            ("finalized", ids[1], 1, True, "FAILED", None),
            ("claimed", waiting[1], 1, None, None, None),
            ("claimed", waiting[2], 1, None, None, None),
        ], "the locked running task is busy, the locked queued task is skipped by the claim"
        assert task_row(conn, waiting[0])[0] == "QUEUED"
        assert task_row(conn, ids[0])[0] == "RUNNING"
        holder.rollback()

    rows, elapsed = timed(
        conn, FINALIZE_AND_CLAIM, {**params, "task_ids": [ids[0]], "attempt_numbers": [1], "outcomes": ["succeeded"]}
    )
    assert elapsed < FAST
    assert [r[:6] for r in rows] == [
        ("finalized", ids[0], 1, True, "SUCCEEDED", None),
        ("claimed", waiting[0], 1, None, None, None),
    ], "after the lock is released the busy element is accepted and the skipped task claimed"
    assert invariant_violations(conn) == []


def test_finalize_and_claim_is_busy_while_a_tf_cancel_is_open(db_dsn, conn):
    caller(conn)
    queue, worker_id, ids = running_tasks(conn, 1)
    params = {
        "worker_id": worker_id,
        "task_ids": ids,
        "attempt_numbers": [1],
        "outcomes": ["succeeded"],
        "queues": [queue],
        "lease_seconds": 60,
        "max_tasks": 1,
    }
    with psycopg.connect(db_dsn) as holder:
        holder.execute("SELECT * FROM taskforge.tf_cancel(%s, 'stop')", (ids[0],))
        rows, elapsed = timed(conn, FINALIZE_AND_CLAIM, params)
        assert elapsed < FAST
        assert [r[:6] for r in rows] == [("finalized", ids[0], 1, False, "RUNNING", "busy")]
        holder.commit()
    rows, _ = timed(conn, FINALIZE_AND_CLAIM, params)
    assert [r[:6] for r in rows] == [("finalized", ids[0], 1, True, "SUCCEEDED", None)], (
        "a success after a cancel request stays SUCCEEDED"
    )
    assert invariant_violations(conn) == []


# --- several workers at once ------------------------------------------------------------------------


def test_parallel_finalize_and_claim_loops_never_share_a_task(db_dsn, conn):
    queue = unique_name("fac_loop")
    n_tasks, n_workers = 400, 6
    task_ids = submit_many(conn, queue, n_tasks)
    barrier = threading.Barrier(n_workers)

    def worker(index: int):
        """Loop: finalize what was claimed last turn (re-sending busy elements) and claim 1..5 more,
        until a turn claims nothing and nothing is pending. Returns (claimed [(task_id, attempt)],
        finalize rows, sizes of the claims, max_tasks asked per call)."""
        rng = random.Random(index)
        with psycopg.connect(db_dsn, autocommit=True) as c:
            caller(c)
            worker_id = register_worker(c, f"fac-loop-{index}", [queue])
            pending: list[tuple[int, int]] = []
            claimed, finalized, sizes = [], [], []
            barrier.wait(timeout=BARRIER_TIMEOUT)
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                max_tasks = rng.randint(1, 5)
                rows = c.execute(
                    FINALIZE_AND_CLAIM,
                    {
                        "worker_id": worker_id,
                        "task_ids": [t for t, _ in pending],
                        "attempt_numbers": [a for _, a in pending],
                        "outcomes": ["succeeded"] * len(pending),
                        "queues": [queue],
                        "lease_seconds": 120,
                        "max_tasks": max_tasks,
                    },
                ).fetchall()
                done = [r for r in rows if r[0] == "finalized"]
                new = [(r[1], r[2]) for r in rows if r[0] == "claimed"]
                assert [r[1] for r in done] == [t for t, _ in pending], "finalized rows come first, in input order"
                finalized.extend(done)
                # A row another transaction holds for a moment is reported busy: send it again.
                pending = [(r[1], r[2]) for r in done if r[5] == "busy"] + new
                claimed.extend(new)
                sizes.append((len(new), max_tasks))
                if not pending:
                    break
            return claimed, finalized, sizes

    with ThreadPoolExecutor(n_workers) as pool:
        results = [f.result(timeout=300) for f in [pool.submit(worker, i) for i in range(n_workers)]]

    claimed = [task_id for got, _, _ in results for task_id, _ in got]
    assert len(claimed) == len(set(claimed)), "some task was claimed twice"
    assert sorted(claimed) == sorted(task_ids), f"claimed {len(set(claimed))} of {n_tasks} tasks"
    assert all(number == 1 for got, _, _ in results for _, number in got)
    assert all(size <= max_tasks for _, _, sizes in results for size, max_tasks in sizes)
    assert sum(1 for got, _, _ in results if got) >= 2, "the workers did not overlap at all"
    finalize_rows = [r for _, rows, _ in results for r in rows]
    assert {(r[3], r[5]) for r in finalize_rows} <= {(True, None), (False, "busy")}, (
        f"unexpected finalize results: {set((r[3], r[4], r[5]) for r in finalize_rows)}"
    )
    assert sum(1 for r in finalize_rows if r[3]) == n_tasks, "every task was finalized exactly once"

    rows = conn.execute(
        """SELECT t.state, count(*), min(a.n), max(a.n)
             FROM taskforge.tasks t
             JOIN LATERAL (SELECT count(*) AS n FROM taskforge.attempts a WHERE a.task_id = t.task_id) a ON true
            WHERE t.queue = %s GROUP BY t.state""",
        (queue,),
    ).fetchall()
    assert rows == [("SUCCEEDED", n_tasks, 1, 1)], f"task states / attempt counts: {rows}"
    assert invariant_violations(conn) == []
