"""client.wait / aio.wait: LISTEN taskforge_finished, then read, then wait for the task's own
notification (or re-read every poll_interval), with the LISTEN/read race forced."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from taskforge import aio, client
from taskforge.errors import InvalidArgument, TaskNotFound
from taskforge.waiting import FINISHED_CHANNEL

from sqlcore_helpers import run_only_task, unique_name

#: Far longer than any correct wake-up: a wait that took this long missed its notification.
SLOW = 60.0


def _finish(dsn: str, task_id: int, queue: str, outcome: str = "succeeded") -> None:
    """Claim ``task_id`` (the only task of ``queue``) as a new worker and finalize it."""
    if outcome == "succeeded":
        run_only_task(dsn, queue, task_id, result={"done": task_id})
    else:
        run_only_task(dsn, queue, task_id, outcome, error={"type": "Boom", "message": "no"})


def _listening(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT pg_listening_channels()").fetchall()]


class FinishAfterRead(psycopg.Connection):
    """A real connection that, right after the waiter's first read of the task's state (before it
    waits for notifications), has another session finish the task and commit: the window in which
    a waiter that read before listening would lose the notification."""

    hook: Any = None

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        cur = super().execute(query, params, **kwargs)
        hook, text = type(self).hook, str(query)
        if hook is not None and "tf_tasks" in text and "state" in text:
            type(self).hook = None
            hook()
        return cur


class AsyncFinishAfterRead(psycopg.AsyncConnection):
    """:class:`FinishAfterRead` for :func:`aio.wait`."""

    hook: Any = None

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        cur = await super().execute(query, params, **kwargs)
        hook, text = type(self).hook, str(query)
        if hook is not None and "tf_tasks" in text and "state" in text:
            type(self).hook = None
            hook()
        return cur


def test_wait_returns_a_task_that_had_already_ended(conn, db_dsn):
    queue = unique_name()
    task = client.submit(conn, "echo", {"n": 1}, queue=queue, notify_finished=True)
    _finish(db_dsn, task.task_id, queue)
    done = client.wait(conn, task.task_id, timeout=SLOW)
    assert (done.task_id, done.state, done.result) == (task.task_id, "SUCCEEDED", {"done": task.task_id})
    assert _listening(conn) == []  # the LISTEN is undone


def test_a_task_ending_between_the_read_and_the_wait_wakes_the_waiter(db_dsn):
    queue = unique_name()
    with psycopg.connect(db_dsn, autocommit=True) as setup:
        task = client.submit(setup, "echo", {}, queue=queue, notify_finished=True)
    FinishAfterRead.hook = lambda: _finish(db_dsn, task.task_id, queue)
    with FinishAfterRead.connect(db_dsn, autocommit=True) as waiter:
        started = time.monotonic()
        done = client.wait(waiter, task.task_id, timeout=SLOW * 2, poll_interval=SLOW * 2)
        took = time.monotonic() - started
    assert FinishAfterRead.hook is None, "the race window was not exercised"
    assert done.state == "SUCCEEDED"
    # Only the notification can end the wait before the first re-read, SLOW * 2 seconds away.
    assert took < SLOW, f"the wait took {took:.1f} s: the notification sent after the read was missed"


def test_a_task_failing_while_waited_for_is_returned_failed(conn, db_dsn):
    queue = unique_name()
    task = client.submit(conn, "echo", {}, queue=queue, max_attempts=1, notify_finished=True)
    timer = threading.Timer(0.3, _finish, (db_dsn, task.task_id, queue, "failed"))
    timer.start()
    try:
        done = client.wait(conn, task.task_id, timeout=SLOW, poll_interval=SLOW)
    finally:
        timer.join()
    assert done.state == "FAILED" and done.last_error["type"] == "Boom"


def test_notifications_of_other_tasks_do_not_end_the_wait(conn, db_dsn):
    queue, other_queue = unique_name(), unique_name()
    task = client.submit(conn, "echo", {}, queue=queue, notify_finished=True)
    other = client.submit(conn, "echo", {}, queue=other_queue, notify_finished=True)
    with pytest.raises(TimeoutError):
        threading.Timer(0.1, _finish, (db_dsn, other.task_id, other_queue)).start()
        client.wait(conn, task.task_id, timeout=1.5, poll_interval=SLOW)
    assert client.get_task(conn, task.task_id).state == "QUEUED"
    assert _listening(conn) == []


def test_a_task_without_notify_finished_is_found_by_polling(conn, db_dsn):
    queue = unique_name()
    task = client.submit(conn, "echo", {}, queue=queue)  # no notification will come
    timer = threading.Timer(0.3, _finish, (db_dsn, task.task_id, queue))
    timer.start()
    try:
        done = client.wait(conn, task.task_id, timeout=SLOW, poll_interval=0.2)
    finally:
        timer.join()
    assert done.state == "SUCCEEDED"


def test_timeout_and_bad_arguments(conn, db_dsn):
    queue = unique_name()
    task = client.submit(conn, "echo", {}, queue=queue, notify_finished=True)
    with pytest.raises(TimeoutError, match=f"task {task.task_id} did not finish within 0.3 s"):
        client.wait(conn, task.task_id, timeout=0.3)
    with pytest.raises(TaskNotFound):
        client.wait(conn, 2**62, timeout=1)
    for kwargs, argument in (
        ({"timeout": 0}, "timeout"),
        ({"timeout": 1, "poll_interval": float("nan")}, "poll_interval"),
    ):
        with pytest.raises(InvalidArgument) as excinfo:
            client.wait(conn, task.task_id, **kwargs)
        assert excinfo.value.argument == argument
    with psycopg.connect(db_dsn) as in_transaction, pytest.raises(InvalidArgument, match="autocommit"):
        client.wait(in_transaction, task.task_id, timeout=1)
    assert _listening(conn) == []


def test_a_connection_already_listening_keeps_its_listen(conn, db_dsn):
    queue = unique_name()
    conn.execute(f"LISTEN {FINISHED_CHANNEL}")
    task = client.submit(conn, "echo", {}, queue=queue, notify_finished=True)
    _finish(db_dsn, task.task_id, queue)
    assert client.wait(conn, task.task_id, timeout=SLOW).state == "SUCCEEDED"
    assert _listening(conn) == [FINISHED_CHANNEL]


@pytest.mark.anyio
async def test_aio_wait_with_the_race_forced(db_dsn):
    queue = unique_name()
    with psycopg.connect(db_dsn, autocommit=True) as setup:
        task = client.submit(setup, "echo", {}, queue=queue, notify_finished=True)
    AsyncFinishAfterRead.hook = lambda: _finish(db_dsn, task.task_id, queue)
    async with await AsyncFinishAfterRead.connect(db_dsn, autocommit=True) as waiter:
        started = time.monotonic()
        done = await aio.wait(waiter, task.task_id, timeout=SLOW * 2, poll_interval=SLOW * 2)
        took = time.monotonic() - started
        assert [r[0] for r in await (await waiter.execute("SELECT pg_listening_channels()")).fetchall()] == []
    assert AsyncFinishAfterRead.hook is None
    assert done.state == "SUCCEEDED" and done.result == {"done": task.task_id}
    assert took < SLOW


@pytest.mark.anyio
async def test_aio_wait_times_out_and_polls(db_dsn):
    queue = unique_name()
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
        task = await aio.submit(aconn, "echo", {}, queue=queue)
        with pytest.raises(TimeoutError):
            await aio.wait(aconn, task.task_id, timeout=0.3, poll_interval=0.1)
        timer = threading.Timer(0.3, _finish, (db_dsn, task.task_id, queue))
        timer.start()
        try:
            done = await aio.wait(aconn, task.task_id, timeout=SLOW, poll_interval=0.2)
        finally:
            timer.join()
    assert done.state == "SUCCEEDED"
