"""taskforge.aio against taskforge.client on a real database: the same calls give the same typed
rows and raise the same refusals (class, SQLSTATE, field, index, message), because both drive
the plans of taskforge.calls. Also what both pass straight through to tf_submit: delay_seconds
(added to the database's clock by tf_submit), notify_finished and traceparent."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from taskforge import aio, client
from taskforge.errors import InvalidArgument, Refused, TaskNotFound
from taskforge.rows import Attempt, Submitted, Task, TaskBrief, TaskRow
from taskforge.submission import SubmitRequest

from sqlcore_helpers import claim, finalize, register_worker, unique_name

pytestmark = pytest.mark.anyio

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def stored(conn: psycopg.Connection, task_id: int) -> tuple[Any, ...]:
    """(notify_finished, traceparent, seconds from creation to scheduled_at) as stored."""
    row = conn.execute(
        "SELECT notify_finished, traceparent::text, extract(epoch FROM scheduled_at - created_at)::float8"
        "  FROM taskforge.tasks WHERE task_id = %s",
        (task_id,),
    ).fetchone()
    assert row is not None
    return tuple(row)


async def test_reads_give_the_same_typed_rows(db_dsn: str, conn: psycopg.Connection) -> None:
    queue = unique_name("aio")
    done = client.submit(conn, "echo", {"n": 1}, queue=queue, priority=2)
    worker = register_worker(conn, queues=[queue])
    (row,) = claim(conn, worker, queues=[queue])
    assert finalize(conn, done.task_id, worker, row[1], "failed", error={"type": "Boom", "message": "no"})[0]
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
        waiting = await aio.submit(aconn, "noop", queue=queue)
        assert isinstance(waiting, Submitted) and (waiting.state, waiting.created) == ("QUEUED", True)
        ids = [done.task_id, waiting.task_id]
        calls: list[tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
            (client.get_task, aio.get_task, (done.task_id,), {}),
            (client.list_tasks, aio.list_tasks, (), {"queue": queue}),
            (client.list_tasks, aio.list_tasks, (), {"queue": queue, "brief": True, "state": "queued"}),
            (client.tasks_by_id, aio.tasks_by_id, (ids,), {}),
            (client.attempts_for, aio.attempts_for, (ids,), {}),
            (client.task_types, aio.task_types, (), {}),
            (client.list_periodic, aio.list_periodic, (), {}),
            (client.invariant_violations, aio.invariant_violations, (), {}),
            (client.finished_recently, aio.finished_recently, (60.0,), {}),
        ]
        for sync, coroutine, args, kwargs in calls:
            assert await coroutine(aconn, *args, **kwargs) == sync(conn, *args, **kwargs), sync.__name__

        task = await aio.get_task(aconn, done.task_id)
        assert isinstance(task, Task) and task.state == "FAILED" and task.last_error["type"] == "Boom"
        (attempt,) = task.attempts
        assert isinstance(attempt, Attempt) and (attempt.attempt_number, attempt.state) == (1, "FAILED")
        assert task.as_dict()["attempts"] == [attempt.as_dict()]
        listed = await aio.list_tasks(aconn, queue=queue)
        assert [type(t) for t in listed] == [TaskRow, TaskRow] and [t.task_id for t in listed] == ids[::-1]
        brief = await aio.list_tasks(aconn, queue=queue, brief=True)
        assert all(type(t) is TaskBrief for t in brief) and "payload" not in brief[0].as_dict()

        # Reads whose values move with the clock: the same rows, by key.
        assert [q.queue for q in await aio.queues(aconn)] == [q.queue for q in client.queues(conn)]
        assert {w.worker_id for w in await aio.workers(aconn)} == {w.worker_id for w in client.workers(conn)}
        assert [s.scheduler_id for s in await aio.schedulers(aconn, include_stopped=True)] == [
            s.scheduler_id for s in client.schedulers(conn, include_stopped=True)
        ]
        sync_stats, async_stats = client.stats(conn), await aio.stats(aconn)
        assert async_stats.queues == sync_stats.queues
        mine = next(q for q in async_stats.queues if q.queue == queue)
        assert (mine.count("QUEUED"), mine.count("FAILED"), mine.total) == (1, 1, 2)
        assert mine.as_dict() == {"queue": queue, "BLOCKED": 0, "QUEUED": 1, "RUNNING": 0, "RETRYING": 0,
                                  "SUCCEEDED": 0, "FAILED": 1, "CANCELLED": 0, "total": 2}  # fmt: skip
        assert [type(m) for m in await aio.throughput_per_minute(aconn)] == [
            type(m) for m in client.throughput_per_minute(conn)
        ]
        assert len(await aio.running_tasks(aconn, limit=10)) == len(client.running_tasks(conn, limit=10))
        assert (await aio.cancel(aconn, waiting.task_id)).task_state == "CANCELLED"
        retried = await aio.retry(aconn, waiting.task_id, 2)
        assert (retried.task_id, retried.task_state) == (waiting.task_id, "QUEUED")
        client.cancel(conn, waiting.task_id)


async def test_queue_controls_and_schedules(db_dsn: str, conn: psycopg.Connection) -> None:
    queue, name = unique_name("aio"), unique_name("aio-sched")
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
        assert await aio.pause_queue(aconn, queue) is True
        assert client.pause_queue(conn, queue) is False
        assert await aio.resume_queue(aconn, queue) is True
        assert await aio.set_queue_limit(aconn, queue, 3) is None
        assert client.set_queue_limit(conn, queue, None) == 3
        first = await aio.schedule_periodic(aconn, name, "@hourly", "noop", queue=queue)
        replaced = client.schedule_periodic(conn, name, "@hourly", "noop", queue=queue)
        assert first.created is True and replaced == dataclasses.replace(first, created=False)
        assert await aio.unschedule_periodic(aconn, name) is True
        assert client.unschedule_periodic(conn, name) is False


def _refusal(exc: BaseException) -> tuple[Any, ...]:
    assert isinstance(exc, Refused), repr(exc)
    return (type(exc), exc.sqlstate, exc.field, exc.argument, exc.index, exc.message)


async def test_the_same_refusals(db_dsn: str, conn: psycopg.Connection) -> None:
    queue = unique_name("aio")
    key = unique_name("key")
    queued = client.submit(conn, "noop", queue=queue, idempotency_key=key).task_id
    cases: list[tuple[str, tuple[Any, ...], dict[str, Any], tuple[Any, ...]]] = [
        # refused before sending
        ("submit", ("noop",), {"queue": queue, "priority": 2**40},
         (InvalidArgument, "TF400", "priority", "priority", None)),
        ("submit", ("noop",), {"queue": queue, "scheduled_at": dt.datetime(2030, 1, 1)},
         (InvalidArgument, "TF400", "scheduled_at", "scheduled_at", None)),
        ("submit_many", ([{"task_type": "noop", "queue": queue}, {"task_type": "noop", "colour": "red"}],), {},
         (InvalidArgument, "TF400", "requests[1]", "requests", 1)),
        ("submit_many", ([{"task_type": "noop"}, {"task_type": "noop"}, {"task_type": "noop", "priority": 1.5}],), {},
         (InvalidArgument, "TF400", "requests[2].priority", "priority", 2)),
        ("get_task", (2**63,), {}, (InvalidArgument, "TF400", "task_id", "task_id", None)),
        ("list_tasks", (), {"limit": 0}, (InvalidArgument, "TF400", "limit", "limit", None)),
        # refused by the database
        ("submit", ("noop",), {"queue": queue, "priority": 40000}, (Refused, "TF400", "priority", "priority", None)),
        ("submit", ("no_such_type",), {"queue": queue}, (Refused, "TF400", "task_type", "task_type", None)),
        ("submit", ("echo",), {"queue": queue, "idempotency_key": key},
         (Refused, "TF409", "idempotency_key", "idempotency_key", None)),
        ("submit_many", ([{"task_type": "noop", "queue": queue}] * 3 + [{"task_type": "noop", "priority": 40000}],),
         {}, (Refused, "TF400", "requests[3].priority", "priority", 3)),
        ("submit_many", ([],), {}, (Refused, "TF400", "requests", "requests", None)),
        ("retry", (queued,), {}, (Refused, "TF409", "task_id", "task_id", None)),
        ("cancel", (2**62,), {}, (TaskNotFound, "TF404", "task_id", "task_id", None)),
        ("get_task", (2**62,), {}, (TaskNotFound, "TF404", "task_id", "task_id", None)),
        ("pause_queue", ("bad queue!",), {}, (Refused, "TF400", "queue", "queue", None)),
    ]  # fmt: skip
    before = conn.execute("SELECT count(*) FROM taskforge.tasks").fetchone()
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
        for name, args, kwargs, expected in cases:
            with pytest.raises(Refused) as sync_info:
                getattr(client, name)(conn, *args, **kwargs)
            with pytest.raises(Refused) as async_info:
                await getattr(aio, name)(aconn, *args, **kwargs)
            got = _refusal(sync_info.value)
            assert got == _refusal(async_info.value), name
            assert got[:5] == expected, (name, got)
            assert got[5].startswith(f"{got[2]}: ") and sync_info.value.problem == got[5][len(got[2]) + 2 :]
            # A refusal of the database keeps its psycopg error as the cause; the client's own
            # refusals (InvalidArgument, a read that found no row) have none.
            from_database = name == "cancel" or expected[0] is Refused
            assert isinstance(sync_info.value.__cause__, psycopg.Error) is from_database, name
            assert isinstance(sync_info.value, ValueError) is (expected[0] is InvalidArgument)
            assert isinstance(sync_info.value, LookupError) is (expected[0] is TaskNotFound)
    assert conn.execute("SELECT count(*) FROM taskforge.tasks").fetchone() == before, "nothing was written"
    client.cancel(conn, queued)


async def test_submit_passes_delay_notify_and_traceparent_to_tf_submit(db_dsn: str, conn: psycopg.Connection) -> None:
    queue = unique_name("aio")
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
        one = await aio.submit(aconn, "noop", queue=queue, delay_seconds=120, notify_finished=True,
                               traceparent=TRACEPARENT)  # fmt: skip
        two = client.submit(conn, "noop", queue=queue, delay_seconds=0.5)
        many = await aio.submit_many(
            aconn,
            [
                SubmitRequest("noop", queue=queue, delay_seconds=60, traceparent=TRACEPARENT),
                {"task_type": "noop", "queue": queue, "notify_finished": True},
            ],
        )
        keyed = SubmitRequest("noop", queue=queue, delay_seconds=60, idempotency_key=unique_name("key"))
        again = client.submit_request(conn, keyed)
        replay = await aio.submit_request(aconn, keyed)
    got = {name: stored(conn, s.task_id) for name, s in (("one", one), ("two", two), ("m0", many[0]), ("m1", many[1]))}
    assert got["one"][:2] == (True, TRACEPARENT) and 119.9 < got["one"][2] <= 120.1
    assert got["two"][:2] == (False, None) and 0.4 < got["two"][2] <= 0.6
    assert got["m0"][:2] == (False, TRACEPARENT) and 59.9 < got["m0"][2] <= 60.1
    assert got["m1"][:2] == (True, None) and abs(got["m1"][2]) < 0.1
    # The delay is part of the request as given: a replay later is the same task.
    assert (replay.task_id, replay.created) == (again.task_id, False)
    for task_id in (one.task_id, two.task_id, many[0].task_id, many[1].task_id, again.task_id):
        client.cancel(conn, task_id)


def test_a_request_is_checked_once_and_reads_back_from_its_json_form() -> None:
    at = dt.datetime(2031, 3, 4, 5, 6, 7, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    request = SubmitRequest("echo", {"n": 1}, queue="q", priority=5, scheduled_at=at, idempotency_key="k")
    element = request.to_json()
    assert element == {"task_type": "echo", "payload": {"n": 1}, "queue": "q", "priority": 5, "max_attempts": 3,
                       "scheduled_at": "2031-03-04T03:06:07+00:00", "idempotency_key": "k"}  # fmt: skip
    assert SubmitRequest.from_json(element) == request
    assert SubmitRequest("noop", None).payload == {}
    with pytest.raises(InvalidArgument, match=r"^delay_seconds: give at most one of scheduled_at and delay_seconds$"):
        SubmitRequest("noop", scheduled_at=at, delay_seconds=1)
    with pytest.raises(InvalidArgument, match=r"^delay_seconds: must be between 0 and 3155760000 seconds"):
        SubmitRequest("noop", delay_seconds=-1)
    with pytest.raises(InvalidArgument, match=r"^payload: must be a JSON object, got null$"):
        SubmitRequest.from_json({"task_type": "noop", "payload": None})
