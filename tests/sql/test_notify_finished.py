"""tf_submit's notify_finished: a task submitted with it makes its terminal transition (SUCCEEDED,
FAILED or CANCELLED), by every path that ends a task, send
``pg_notify('taskforge_finished', task_id)`` in the same transaction, delivered at its commit and
never on rollback; a task without it, taken down the same path, sends nothing, and no transition
that does not end a task sends anything. Two sessions: one acts, one LISTENs
(db/functions/_tf_notify_finished.sql, docs/sql-api.md#waiting-for-a-result).

Order is what makes "nothing for the other task" observable without waiting out a timeout each
time: notifications arrive in commit order, so each path acts on the unflagged task first (or in
the same transaction) and the listener reads until the flagged task's notification arrives."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from sqlcore_helpers import claim, finalize, recover, register_worker, unique_name

CHANNEL = "taskforge_finished"
#: Far longer than any delivery takes: a notification not there by then was never sent.
SLOW = 30.0
#: How long a notification that must not come is waited for.
QUIET = 0.5
#: Long enough for a lease of 0.05 s, or a deadline of 0.05 s, to have passed.
PAST_A_LEASE = 0.15


@pytest.fixture()
def listener(db_dsn) -> Iterator[psycopg.Connection]:
    """A session LISTENing on the finished channel, as a waiter does."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute(f"LISTEN {CHANNEL}")
        yield c


def _submit(conn: psycopg.Connection, queue: str, notify: bool, **request: Any) -> int:
    params = {"max_attempts": 3, "timeout_seconds": None, "task_type": "noop", **request}
    row = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %(task_type)s, queue => %(queue)s,"
        " max_attempts => %(max_attempts)s, timeout_seconds => %(timeout_seconds)s,"
        " notify_finished => %(notify)s)",
        {**params, "queue": queue, "notify": notify},
    ).fetchone()
    assert row is not None
    return int(row[0])


def _until(listener: psycopg.Connection, task_id: int) -> list[int]:
    """Every finished notification up to and including ``task_id``'s (fails after SLOW seconds)."""
    seen: list[int] = []
    deadline = time.monotonic() + SLOW
    while task_id not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {CHANNEL} notification for task {task_id} within {SLOW} s (got {seen})"
        seen += [int(n.payload) for n in listener.notifies(timeout=left, stop_after=1) if n.channel == CHANNEL]
    # Anything sent in the same transaction is delivered with it.
    seen += [int(n.payload) for n in listener.notifies(timeout=0.05) if n.channel == CHANNEL]
    return seen


def _quiet(listener: psycopg.Connection) -> list[int]:
    return [int(n.payload) for n in listener.notifies(timeout=QUIET) if n.channel == CHANNEL]


def _states(conn: psycopg.Connection, *task_ids: int) -> list[str]:
    rows = conn.execute(
        "SELECT state FROM taskforge.tf_tasks WHERE task_id = ANY(%s) ORDER BY array_position(%s, task_id)",
        (list(task_ids), list(task_ids)),
    ).fetchall()
    return [r[0] for r in rows]


def _finalize_many(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]], outcome: str) -> None:
    rows = conn.execute(
        "SELECT accepted FROM taskforge.tf_finalize_many(worker_id => %s, task_ids => %s, attempt_numbers => %s,"
        " outcomes => %s)",
        (worker, [t for t, _ in held], [a for _, a in held], [outcome] * len(held)),
    ).fetchall()
    assert [r[0] for r in rows] == [True] * len(held)


def _finalize_and_claim(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]], outcome: str) -> None:
    rows = conn.execute(
        "SELECT accepted FROM taskforge.tf_finalize_and_claim(worker_id => %s, task_ids => %s,"
        " attempt_numbers => %s, outcomes => %s, max_tasks => 0)",
        (worker, [t for t, _ in held], [a for _, a in held], [outcome] * len(held)),
    ).fetchall()
    assert [r[0] for r in rows] == [True] * len(held)


def _cancel(conn: psycopg.Connection, task_id: int) -> None:
    conn.execute("SELECT * FROM taskforge.tf_cancel(task_id => %s)", (task_id,))


#: A path: how the two tasks are submitted (extra tf_submit arguments), the lease of their claim
#: (None: not claimed), what ends them, and the terminal state it ends them in.
Path = tuple[dict[str, Any], float | None, Callable[[psycopg.Connection, Any, list[tuple[int, int]]], None], str]


def _each(step: Callable[[psycopg.Connection, Any, int, int], None]) -> Callable[..., None]:
    """A path step applied to the held tasks one by one (one transaction each), in order."""

    def run(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]]) -> None:
        for task_id, attempt in held:
            step(conn, worker, task_id, attempt)

    return run


def _expire_then_recover(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]]) -> None:
    time.sleep(PAST_A_LEASE)
    recover(conn)


def _request_cancel_then_recover(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]]) -> None:
    for task_id, _ in held:
        _cancel(conn, task_id)
    _expire_then_recover(conn, worker, held)


def _request_cancel_then_fail(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]]) -> None:
    for task_id, attempt in held:
        _cancel(conn, task_id)
        finalize(conn, task_id, worker, attempt, "failed", error={"type": "E", "message": "after the request"})


def _retry_then_cancel(conn: psycopg.Connection, worker: Any, held: list[tuple[int, int]]) -> None:
    for task_id, attempt in held:
        assert (
            finalize(conn, task_id, worker, attempt, "retryable", error={"type": "E", "message": "again"})[1]
            == "RETRYING"
        )
        _cancel(conn, task_id)


PATHS: dict[str, Path] = {
    "tf_finalize succeeded": (
        {},
        30.0,
        _each(lambda c, w, t, a: finalize(c, t, w, a, "succeeded", result={"ok": True})),
        "SUCCEEDED",
    ),
    "tf_finalize failed": (
        {},
        30.0,
        _each(lambda c, w, t, a: finalize(c, t, w, a, "failed", error={"type": "E", "message": "no"})),
        "FAILED",
    ),
    "tf_finalize_many retryable, budget spent": (
        {"max_attempts": 1},
        30.0,
        lambda c, w, held: _finalize_many(c, w, held, "retryable"),
        "FAILED",
    ),
    "tf_finalize_and_claim cancelled": (
        {},
        30.0,
        lambda c, w, held: _finalize_and_claim(c, w, held, "cancelled"),
        "CANCELLED",
    ),
    "a cancel request honoured at finalize": ({}, 30.0, _request_cancel_then_fail, "CANCELLED"),
    "tf_recover, lease expired, budget spent": ({"max_attempts": 1}, 0.05, _expire_then_recover, "FAILED"),
    "tf_recover, deadline passed, budget spent": (
        {"max_attempts": 1, "timeout_seconds": 0.05},
        30.0,
        _expire_then_recover,
        "FAILED",
    ),
    "a cancel request honoured at recovery": ({}, 0.05, _request_cancel_then_recover, "CANCELLED"),
    "tf_cancel of a QUEUED task": ({}, None, _each(lambda c, w, t, a: _cancel(c, t)), "CANCELLED"),
    "tf_cancel of a RETRYING task": ({}, 30.0, _retry_then_cancel, "CANCELLED"),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_terminal_path_notifies_a_flagged_task_and_only_it(conn, listener, path):
    request, lease_seconds, end, state = PATHS[path]
    queue = unique_name()
    plain = _submit(conn, queue, False, **request)
    flagged = _submit(conn, queue, True, **request)
    worker = register_worker(conn, queues=[queue])
    held = [(plain, 0), (flagged, 0)]
    if lease_seconds is not None:
        rows = claim(conn, worker, [queue], lease_seconds=lease_seconds, max_tasks=2)
        held = sorted(((r[0], r[1]) for r in rows), key=lambda h: h[0] != plain)  # the plain task first
        assert [h[0] for h in held] == [plain, flagged]
    assert _quiet(listener) == [], "submitting and claiming end nothing"
    end(conn, worker, held)
    assert _states(conn, plain, flagged) == [state, state]
    assert _until(listener, flagged) == [flagged]


def test_transitions_that_do_not_end_a_task_notify_nothing_and_a_redriven_task_notifies_again(conn, listener):
    queue = unique_name()
    fast = unique_name("tt_notify")  # a retry delay of 0, so that tf_promote finds it due at once
    conn.execute(
        "SELECT taskforge.tf_register_task_type(%s, backoff_base_seconds => 0, backoff_cap_seconds => 0,"
        " backoff_jitter => 0)",
        (fast,),
    )
    task_id = _submit(conn, queue, True, task_type=fast, max_attempts=3)
    worker = register_worker(conn, queues=[queue])
    ((_, attempt, *_),) = claim(conn, worker, [queue])
    assert finalize(conn, task_id, worker, attempt, "retryable", error={"type": "E", "message": "1"})[1] == "RETRYING"
    assert conn.execute("SELECT promoted FROM taskforge.tf_promote()").fetchone() is not None
    assert _states(conn, task_id) == ["QUEUED"]
    ((_, attempt, *_),) = claim(conn, worker, [queue], lease_seconds=0.05)
    time.sleep(PAST_A_LEASE)
    recover(conn)
    assert _states(conn, task_id) == ["QUEUED"], "recovered with budget left"
    ((_, attempt, *_),) = claim(conn, worker, [queue])
    assert attempt == 3
    assert finalize(conn, task_id, worker, attempt, "failed", error={"type": "E", "message": "3"})[1] == "FAILED"
    assert _until(listener, task_id) == [task_id], "retry, promotion, claims and recovery sent nothing; the end did"

    conn.execute("SELECT * FROM taskforge.tf_retry(task_id => %s)", (task_id,))
    assert _quiet(listener) == [], "a redrive does not end the task"
    ((_, attempt, *_),) = claim(conn, worker, [queue])
    finalize(conn, task_id, worker, attempt, "succeeded")
    assert _until(listener, task_id) == [task_id], "its second end notifies again"


def test_the_notification_is_delivered_at_commit_and_never_after_a_rollback(conn, listener):
    queue = unique_name()
    task_id = _submit(conn, queue, True)
    worker = register_worker(conn, queues=[queue])
    ((_, attempt, *_),) = claim(conn, worker, [queue])

    with pytest.raises(RuntimeError), conn.transaction():
        assert finalize(conn, task_id, worker, attempt, "succeeded")[0]
        raise RuntimeError("roll back")
    assert _quiet(listener) == [], "a rolled-back finalize sends nothing"
    assert _states(conn, task_id) == ["RUNNING"]

    with conn.transaction():
        assert finalize(conn, task_id, worker, attempt, "succeeded")[0]
        assert _quiet(listener) == [], "nothing while the ending transaction is open"
    assert _until(listener, task_id) == [task_id], "delivered once it commits"


def test_a_task_submitted_by_tf_submit_many_with_the_flag_notifies(conn, listener):
    queue = unique_name()
    rows = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit_many(%s)",
        (
            Jsonb(
                [{"task_type": "noop", "queue": queue}, {"task_type": "noop", "queue": queue, "notify_finished": True}]
            ),
        ),
    ).fetchall()
    plain, flagged = (r[0] for r in rows)
    _cancel(conn, plain)
    _cancel(conn, flagged)
    assert _until(listener, flagged) == [flagged]
