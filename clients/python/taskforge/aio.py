"""The functions of :mod:`taskforge.client` as coroutines, for a psycopg ``AsyncConnection``
(or a SQLAlchemy ``AsyncConnection``/``AsyncSession``: :func:`taskforge.adapters.async_psycopg_connection`).

Same names, arguments, results (:mod:`taskforge.rows`) and errors (:mod:`taskforge.errors`) as
:mod:`taskforge.client`, from the same rules: both drive the plans of :mod:`taskforge.calls`, so
a check, a statement or an answer is written once. ``await aio.submit(aconn, "echo", {"n": 1})``.
Each call awaits its statements on ``conn`` in order; the event loop is never blocked. The
docstrings of :mod:`taskforge.client` describe every function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, Unpack

from psycopg.rows import dict_row

from . import calls
from .adapters import async_psycopg_connection, decode_json
from .calls import Plan, Statement
from .errors import refusals
from .rows import (
    Attempt,
    Cancelled,
    ConcurrencyKey,
    Dependency,
    FinishedCount,
    InvariantViolation,
    PeriodicSchedule,
    Queue,
    RateLimit,
    Retried,
    RunningTask,
    Scheduled,
    Scheduler,
    Stats,
    Submitted,
    Task,
    TaskBrief,
    TaskRow,
    TaskType,
    ThroughputMinute,
    Worker,
)
from .submission import SubmitOptions, SubmitRequest
from .waiting import wait_async as wait

__all__ = [
    "attempts_for",
    "cancel",
    "concurrency_keys",
    "dependencies",
    "finished_recently",
    "get_task",
    "invariant_violations",
    "list_periodic",
    "list_tasks",
    "pause_queue",
    "queues",
    "rate_limits",
    "resume_queue",
    "retry",
    "run",
    "running_tasks",
    "schedule_periodic",
    "schedulers",
    "set_concurrency_limit",
    "set_queue_aging",
    "set_queue_limit",
    "set_rate_limit",
    "stats",
    "submit",
    "submit_many",
    "submit_request",
    "task_types",
    "tasks_by_id",
    "throughput_per_minute",
    "unschedule_periodic",
    "wait",
    "workers",
]

T = TypeVar("T")


async def _fetch(conn: Any, statement: Statement) -> calls.Rows:
    with refusals():
        async with conn.cursor(row_factory=dict_row) as cur:
            decode_json(cur)
            await cur.execute(statement.query, statement.params)
            rows: calls.Rows = await cur.fetchall()
            return rows


async def run(conn: Any, plan: Plan[T]) -> T:
    """:func:`taskforge.client.run` for an ``AsyncConnection``: the plan's checks first, then
    each statement awaited in turn; a refusal of the SQL API raises :class:`~taskforge.errors.Refused`."""
    try:
        statement = next(plan)
        raw = None
        while True:
            try:
                if raw is None:
                    raw = await async_psycopg_connection(conn)
                rows = await _fetch(raw, statement)
            except BaseException as exc:  # noqa: BLE001  (re-raised by the plan)
                # Into the plan, so that its blocks (the submit's span) end here, in this context.
                statement = plan.throw(exc)
            else:
                statement = plan.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


async def submit(
    conn: Any,
    task_type: str,
    payload: dict[str, Any] | None = None,
    **options: Unpack[SubmitOptions],
) -> Submitted:
    """:func:`taskforge.client.submit` (``tf_submit``)."""
    request = SubmitRequest(task_type, payload, **options)  # type: ignore[arg-type]  # None payload means {}
    return await submit_request(conn, request)


async def submit_request(conn: Any, request: SubmitRequest) -> Submitted:
    """:func:`taskforge.client.submit_request` (``tf_submit``)."""
    return await run(conn, calls.submit(request))


async def submit_many(conn: Any, requests: Sequence[SubmitRequest | Mapping[str, Any]]) -> list[Submitted]:
    """:func:`taskforge.client.submit_many` (``tf_submit_many``)."""
    return await run(conn, calls.submit_many(requests))


async def cancel(conn: Any, task_id: int, reason: str | None = None) -> Cancelled:
    """:func:`taskforge.client.cancel` (``tf_cancel``)."""
    return await run(conn, calls.cancel(task_id, reason))


async def retry(conn: Any, task_id: int, extra_attempts: int = 1) -> Retried:
    """:func:`taskforge.client.retry` (``tf_retry``)."""
    return await run(conn, calls.retry(task_id, extra_attempts))


async def schedule_periodic(
    conn: Any,
    name: str,
    cron: str,
    task_type: str,
    payload: dict[str, Any] | None = None,
    *,
    queue: str = "default",
    priority: int = 0,
    max_attempts: int = 3,
    timezone: str = "UTC",
) -> Scheduled:
    """:func:`taskforge.client.schedule_periodic` (``tf_schedule_periodic``)."""
    plan = calls.schedule_periodic(
        name, cron, task_type, payload, queue=queue, priority=priority, max_attempts=max_attempts, timezone=timezone
    )
    return await run(conn, plan)


async def unschedule_periodic(conn: Any, name: str) -> bool:
    """:func:`taskforge.client.unschedule_periodic` (``tf_unschedule_periodic``)."""
    return await run(conn, calls.unschedule_periodic(name))


async def list_periodic(conn: Any) -> list[PeriodicSchedule]:
    """:func:`taskforge.client.list_periodic` (``tf_periodic``)."""
    return await run(conn, calls.list_periodic())


async def get_task(conn: Any, task_id: int) -> Task:
    """:func:`taskforge.client.get_task` (``tf_tasks`` and ``tf_attempts``)."""
    return await run(conn, calls.get_task(task_id))


async def list_tasks(
    conn: Any,
    *,
    state: str | None = None,
    queue: str | None = None,
    task_type: str | None = None,
    limit: int = 50,
    brief: bool = False,
) -> list[TaskRow] | list[TaskBrief]:
    """:func:`taskforge.client.list_tasks` (``tf_tasks``)."""
    return await run(conn, calls.list_tasks(state=state, queue=queue, task_type=task_type, limit=limit, brief=brief))


async def tasks_by_id(conn: Any, task_ids: Iterable[int]) -> list[TaskRow]:
    """:func:`taskforge.client.tasks_by_id` (``tf_tasks``)."""
    return await run(conn, calls.tasks_by_id(task_ids))


async def attempts_for(conn: Any, task_ids: Iterable[int]) -> list[Attempt]:
    """:func:`taskforge.client.attempts_for` (``tf_attempts``)."""
    return await run(conn, calls.attempts_for(task_ids))


async def running_tasks(conn: Any, *, limit: int = 1000) -> list[RunningTask]:
    """:func:`taskforge.client.running_tasks` (``tf_tasks``)."""
    return await run(conn, calls.running_tasks(limit=limit))


async def workers(conn: Any, *, include_stopped: bool = False) -> list[Worker]:
    """:func:`taskforge.client.workers` (``tf_workers``)."""
    return await run(conn, calls.workers(include_stopped=include_stopped))


async def schedulers(conn: Any, *, include_stopped: bool = False) -> list[Scheduler]:
    """:func:`taskforge.client.schedulers` (``tf_schedulers``)."""
    return await run(conn, calls.schedulers(include_stopped=include_stopped))


async def stats(conn: Any) -> Stats:
    """:func:`taskforge.client.stats` (``tf_queue_stats`` and ``tf_throughput``)."""
    return await run(conn, calls.stats())


async def throughput_per_minute(conn: Any) -> list[ThroughputMinute]:
    """:func:`taskforge.client.throughput_per_minute` (``tf_throughput_per_minute``)."""
    return await run(conn, calls.throughput_per_minute())


async def finished_recently(conn: Any, seconds: float = 3600.0) -> list[FinishedCount]:
    """:func:`taskforge.client.finished_recently` (``tf_tasks``)."""
    return await run(conn, calls.finished_recently(seconds))


async def task_types(conn: Any) -> list[TaskType]:
    """:func:`taskforge.client.task_types` (``tf_task_types``)."""
    return await run(conn, calls.task_types())


async def queues(conn: Any) -> list[Queue]:
    """:func:`taskforge.client.queues` (``tf_queues``)."""
    return await run(conn, calls.queues())


async def pause_queue(conn: Any, queue: str) -> bool:
    """:func:`taskforge.client.pause_queue` (``tf_pause_queue``)."""
    return await run(conn, calls.pause_queue(queue))


async def resume_queue(conn: Any, queue: str) -> bool:
    """:func:`taskforge.client.resume_queue` (``tf_resume_queue``)."""
    return await run(conn, calls.resume_queue(queue))


async def set_queue_limit(conn: Any, queue: str, max_running: int | None) -> int | None:
    """:func:`taskforge.client.set_queue_limit` (``tf_set_queue_limit``)."""
    return await run(conn, calls.set_queue_limit(queue, max_running))


async def set_queue_aging(conn: Any, queue: str, priority_per_second: float | None) -> float | None:
    """:func:`taskforge.client.set_queue_aging` (``tf_set_queue_aging``)."""
    return await run(conn, calls.set_queue_aging(queue, priority_per_second))


async def dependencies(conn: Any, task_id: int) -> list[Dependency]:
    """:func:`taskforge.client.dependencies` (``tf_task_dependencies``)."""
    return await run(conn, calls.dependencies(task_id))


async def set_rate_limit(
    conn: Any, rate_key: str, per_second: float | None, burst: int | None = None
) -> tuple[float | None, int | None]:
    """:func:`taskforge.client.set_rate_limit` (``tf_set_rate_limit``)."""
    return await run(conn, calls.set_rate_limit(rate_key, per_second, burst))


async def set_concurrency_limit(conn: Any, concurrency_key: str, max_running: int | None) -> int | None:
    """:func:`taskforge.client.set_concurrency_limit` (``tf_set_concurrency_limit``)."""
    return await run(conn, calls.set_concurrency_limit(concurrency_key, max_running))


async def rate_limits(conn: Any) -> list[RateLimit]:
    """:func:`taskforge.client.rate_limits` (``tf_rate_limits``)."""
    return await run(conn, calls.rate_limits())


async def concurrency_keys(conn: Any) -> list[ConcurrencyKey]:
    """:func:`taskforge.client.concurrency_keys` (``tf_concurrency_keys``)."""
    return await run(conn, calls.concurrency_keys())


async def invariant_violations(conn: Any) -> list[InvariantViolation]:
    """:func:`taskforge.client.invariant_violations` (``tf_invariant_violations``)."""
    return await run(conn, calls.invariant_violations())
