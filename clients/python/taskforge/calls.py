"""The rules of every client call, free of I/O, shared by :mod:`taskforge.client` (psycopg
``Connection``) and :mod:`taskforge.aio` (``AsyncConnection``).

Each function here is a *plan*: a generator that checks its arguments, yields the
:class:`Statement` s to send (SQL text from :mod:`taskforge.sql` and its parameters), receives
each one's rows (``dict`` per row) and returns the typed answer (:mod:`taskforge.rows`). The
client modules only drive plans (:func:`taskforge.client.run`, :func:`taskforge.aio.run`):
send, fetch, turn a refusal into :class:`taskforge.errors.Refused`. A plan raises
:class:`taskforge.errors.InvalidArgument` before it yields anything, so nothing is sent for a
value the client refuses.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from psycopg.types.json import Jsonb

from . import checks, sql
from .errors import InvalidArgument, TaskNotFound
from .rows import (
    Attempt,
    Cancelled,
    ConcurrencyKey,
    Dependency,
    FinishedCount,
    InvariantViolation,
    PeriodicSchedule,
    Queue,
    QueueCounts,
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
    Throughput,
    ThroughputMinute,
    Worker,
)
from .submission import SubmitRequest
from .tracing import current_traceparent, submit_span

__all__ = [
    "Plan",
    "Rows",
    "Statement",
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
    "task_types",
    "tasks_by_id",
    "throughput_per_minute",
    "unschedule_periodic",
    "workers",
]

T = TypeVar("T")

#: Rows of one statement: one ``dict`` (column -> value) per row.
Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Statement:
    """One statement to send: SQL text and its named parameters."""

    query: str
    params: Mapping[str, Any] | None = None


#: A call's plan: yields statements, is sent each one's rows, returns the answer.
Plan = Generator[Statement, Rows, T]


def _bigint(argument: str, value: Any) -> Any:
    return checks.int_arg(argument, value, checks.INT8_RANGE, "bigint")


def _int(argument: str, value: Any) -> Any:
    return checks.int_arg(argument, value, checks.INT4_RANGE, "int")


def _ids(task_ids: Iterable[int]) -> list[int]:
    return [_bigint("task_ids", t) for t in task_ids]


# --- admission --------------------------------------------------------------------------------
def _traced(request: SubmitRequest, traceparent: str | None) -> SubmitRequest:
    """The request carrying the submit span's context, unless it names one of its own."""
    if request.traceparent is not None or traceparent is None:
        return request
    return dataclasses.replace(request, traceparent=traceparent)


def submit(request: SubmitRequest) -> Plan[Submitted]:
    """``tf_submit`` with the request's named arguments, inside the submit's span
    (:func:`taskforge.tracing.submit_span`; a no-op without OpenTelemetry), whose context the
    task stores as its ``traceparent`` unless the request gives one."""
    with submit_span(request.task_type, request.queue) as span:
        request = _traced(request, current_traceparent())
        rows = yield Statement(sql.SUBMIT, request.params())
        submitted = Submitted.from_row(rows[0])
        span.set_attribute("taskforge.task_id", submitted.task_id)
    return submitted


def submit_many(requests: Sequence[SubmitRequest | Mapping[str, Any]]) -> Plan[list[Submitted]]:
    """``tf_submit_many`` with one element per request (a :class:`SubmitRequest`, or a mapping
    for :meth:`SubmitRequest.from_mapping`), in order. A mapping the client refuses raises
    :class:`InvalidArgument` naming its element (``requests[3].priority``)."""
    elements = []
    for i, request in enumerate(requests):
        if not isinstance(request, SubmitRequest):
            try:
                request = SubmitRequest.from_mapping(request)
            except InvalidArgument as exc:
                raise InvalidArgument(f"requests[{i}]" + (f".{exc.field}" if exc.field else ""), exc.problem) from None
        elements.append(request)
    types, queues = {r.task_type for r in elements}, {r.queue for r in elements}
    with submit_span(
        types.pop() if len(types) == 1 else "(several types)", queues.pop() if len(queues) == 1 else "(several queues)"
    ) as span:
        span.set_attribute("taskforge.batch_size", len(elements))
        traceparent = current_traceparent()
        body = [_traced(r, traceparent).to_json() for r in elements]
        rows = yield Statement(sql.SUBMIT_MANY, {"requests": Jsonb(body)})
    return [Submitted.from_row(r) for r in rows]


def cancel(task_id: int, reason: str | None) -> Plan[Cancelled]:
    """``tf_cancel``."""
    params = {"task_id": _bigint("task_id", task_id), "reason": checks.text_arg("reason", reason)}
    rows = yield Statement(sql.CANCEL, params)
    return Cancelled(task_id=params["task_id"], **rows[0])


def retry(task_id: int, extra_attempts: int) -> Plan[Retried]:
    """``tf_retry``."""
    params = {"task_id": _bigint("task_id", task_id), "extra_attempts": _int("extra_attempts", extra_attempts)}
    rows = yield Statement(sql.RETRY, params)
    return Retried(task_id=params["task_id"], **rows[0])


# --- periodic schedules -------------------------------------------------------------------------
def schedule_periodic(
    name: str,
    cron: str,
    task_type: str,
    payload: dict[str, Any] | None,
    *,
    queue: str,
    priority: int,
    max_attempts: int,
    timezone: str,
) -> Plan[Scheduled]:
    """``tf_schedule_periodic``; the request is checked as a submit's."""
    checks.check_payload(payload)
    params = {
        "name": checks.text_arg("name", name),
        "cron": checks.text_arg("cron", cron),
        "task_type": checks.text_arg("task_type", task_type),
        "payload": Jsonb({} if payload is None else payload),
        "queue": checks.text_arg("queue", queue),
        "priority": _int("priority", priority),
        "max_attempts": _int("max_attempts", max_attempts),
        "timezone": checks.text_arg("timezone", timezone),
    }
    rows = yield Statement(sql.SCHEDULE_PERIODIC, params)
    return Scheduled(name=name, **rows[0])


def unschedule_periodic(name: str) -> Plan[bool]:
    """``tf_unschedule_periodic``: whether the schedule existed."""
    rows = yield Statement(sql.UNSCHEDULE_PERIODIC, {"name": checks.text_arg("name", name)})
    return bool(rows[0]["removed"])


def list_periodic() -> Plan[list[PeriodicSchedule]]:
    """Every ``tf_periodic`` row, by name."""
    rows = yield Statement(sql.PERIODIC_LIST)
    return [PeriodicSchedule.from_row(r) for r in rows]


# --- tasks --------------------------------------------------------------------------------------
def get_task(task_id: int) -> Plan[Task]:
    """The ``tf_tasks`` row and its ``tf_attempts`` rows; :class:`TaskNotFound` without a row."""
    task_id = _bigint("task_id", task_id)
    rows = yield Statement(sql.TASK_GET, {"task_id": task_id})
    if not rows:
        raise TaskNotFound(task_id)
    attempts = yield Statement(sql.ATTEMPTS_FOR_TASKS, {"task_ids": [task_id]})
    return Task.with_attempts(rows[0], attempts)


def list_tasks(
    *, state: str | None, queue: str | None, task_type: str | None, limit: int, brief: bool
) -> Plan[list[TaskRow] | list[TaskBrief]]:
    """Tasks newest first, filtered; the brief columns with ``brief``."""
    limit = checks.limit_arg(limit)
    if state is not None:
        state = state.upper() if isinstance(state, str) else state
        if state not in checks.STATES:
            raise InvalidArgument("state", f"must be one of {', '.join(checks.STATES)}, got {state!r}")
    checks.text_arg("queue", queue)
    checks.text_arg("task_type", task_type)
    params = {"state": state, "queue": queue, "task_type": task_type, "limit": limit}
    rows = yield Statement(sql.TASKS_LIST_BRIEF if brief else sql.TASKS_LIST, params)
    if brief:
        return [TaskBrief.from_row(r) for r in rows]
    return [TaskRow.from_row(r) for r in rows]


def tasks_by_id(task_ids: Iterable[int]) -> Plan[list[TaskRow]]:
    """The ``tf_tasks`` rows of these ids, by id."""
    rows = yield Statement(sql.TASKS_BY_ID, {"task_ids": _ids(task_ids)})
    return [TaskRow.from_row(r) for r in rows]


def attempts_for(task_ids: Iterable[int]) -> Plan[list[Attempt]]:
    """The ``tf_attempts`` rows of these tasks, by task and attempt number."""
    rows = yield Statement(sql.ATTEMPTS_FOR_TASKS, {"task_ids": _ids(task_ids)})
    return [Attempt.from_row(r) for r in rows]


def running_tasks(*, limit: int) -> Plan[list[RunningTask]]:
    """RUNNING tasks, oldest id first."""
    rows = yield Statement(sql.RUNNING_TASKS, {"limit": checks.limit_arg(limit)})
    return [RunningTask.from_row(r) for r in rows]


# --- processes, queues, statistics --------------------------------------------------------------
def workers(*, include_stopped: bool) -> Plan[list[Worker]]:
    """``tf_workers`` rows, newest start first."""
    rows = yield Statement(sql.WORKERS_LIST, {"include_stopped": bool(include_stopped)})
    return [Worker.from_row(r) for r in rows]


def schedulers(*, include_stopped: bool) -> Plan[list[Scheduler]]:
    """``tf_schedulers`` rows, newest start first."""
    rows = yield Statement(sql.SCHEDULERS_LIST, {"include_stopped": bool(include_stopped)})
    return [Scheduler.from_row(r) for r in rows]


def stats() -> Plan[Stats]:
    """Counts per queue and state (``tf_queue_stats``) and ``tf_throughput``."""
    per_queue: dict[str, dict[str, Any]] = {}
    for row in (yield Statement(sql.QUEUE_STATS)):
        counts = per_queue.setdefault(row["queue"], {"queue": row["queue"], "total": 0})
        counts[str(row["state"]).lower()] = int(row["tasks"])
        counts["total"] += int(row["tasks"])
    throughput = yield Statement(sql.THROUGHPUT)
    return Stats(
        queues=tuple(QueueCounts(**c) for c in per_queue.values()),
        throughput=tuple(Throughput.from_row(r) for r in throughput),
    )


def throughput_per_minute() -> Plan[list[ThroughputMinute]]:
    """``tf_throughput_per_minute`` rows, oldest minute first."""
    rows = yield Statement(sql.THROUGHPUT_PER_MINUTE)
    return [ThroughputMinute.from_row(r) for r in rows]


def finished_recently(seconds: float) -> Plan[list[FinishedCount]]:
    """Terminal tasks of the last ``seconds`` per queue and state."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, numbers.Real)
        or not 0 < seconds <= checks.MAX_DELAY_SECONDS
    ):
        raise InvalidArgument("seconds", f"must be a number of seconds above 0, got {seconds!r}")
    rows = yield Statement(sql.TASKS_FINISHED_RECENTLY, {"seconds": float(seconds)})
    return [FinishedCount.from_row(r) for r in rows]


def task_types() -> Plan[list[TaskType]]:
    """``tf_task_types`` rows, by name."""
    rows = yield Statement(sql.TASK_TYPES)
    return [TaskType.from_row(r) for r in rows]


def queues() -> Plan[list[Queue]]:
    """``tf_queues`` rows, by name."""
    rows = yield Statement(sql.QUEUES_LIST)
    return [Queue.from_row(r) for r in rows]


def pause_queue(queue: str) -> Plan[bool]:
    """``tf_pause_queue``: whether it was running."""
    rows = yield Statement(sql.PAUSE_QUEUE, {"queue": checks.text_arg("queue", queue)})
    return bool(rows[0]["changed"])


def resume_queue(queue: str) -> Plan[bool]:
    """``tf_resume_queue``: whether it was paused."""
    rows = yield Statement(sql.RESUME_QUEUE, {"queue": checks.text_arg("queue", queue)})
    return bool(rows[0]["changed"])


def set_queue_limit(queue: str, max_running: int | None) -> Plan[int | None]:
    """``tf_set_queue_limit``: the previous limit (``None`` = unlimited)."""
    params = {"queue": checks.text_arg("queue", queue), "max_running": _int("max_running", max_running)}
    rows = yield Statement(sql.SET_QUEUE_LIMIT, params)
    previous = rows[0]["previous"]
    return None if previous is None else int(previous)


def set_queue_aging(queue: str, priority_per_second: float | None) -> Plan[float | None]:
    """``tf_set_queue_aging``: the previous rate (``None`` = off)."""
    params = {
        "queue": checks.text_arg("queue", queue),
        "priority_per_second": checks.seconds_arg(
            "priority_per_second", priority_per_second, "priority points per second"
        ),
    }
    rows = yield Statement(sql.SET_QUEUE_AGING, params)
    previous = rows[0]["previous"]
    return None if previous is None else float(previous)


def dependencies(task_id: int) -> Plan[list[Dependency]]:
    """``tf_task_dependencies`` rows naming the task as child or parent."""
    rows = yield Statement(sql.DEPENDENCIES, {"task_id": _bigint("task_id", task_id)})
    return [Dependency.from_row(r) for r in rows]


def set_rate_limit(rate_key: str, per_second: float | None, burst: int | None) -> Plan[tuple[float | None, int | None]]:
    """``tf_set_rate_limit``: the previous (per_second, burst)."""
    params = {
        "rate_key": checks.text_arg("rate_key", rate_key),
        "per_second": checks.seconds_arg("per_second", per_second, "tokens per second"),
        "burst": _int("burst", burst),
    }
    rows = yield Statement(sql.SET_RATE_LIMIT, params)
    return rows[0]["previous_per_second"], rows[0]["previous_burst"]


def set_concurrency_limit(concurrency_key: str, max_running: int | None) -> Plan[int | None]:
    """``tf_set_concurrency_limit``: the previous limit (``None`` = unlimited)."""
    params = {
        "concurrency_key": checks.text_arg("concurrency_key", concurrency_key),
        "max_running": _int("max_running", max_running),
    }
    rows = yield Statement(sql.SET_CONCURRENCY_LIMIT, params)
    previous = rows[0]["previous"]
    return None if previous is None else int(previous)


def rate_limits() -> Plan[list[RateLimit]]:
    """``tf_rate_limits`` rows, by key."""
    rows = yield Statement(sql.RATE_LIMITS)
    return [RateLimit.from_row(r) for r in rows]


def concurrency_keys() -> Plan[list[ConcurrencyKey]]:
    """``tf_concurrency_keys`` rows, by key."""
    rows = yield Statement(sql.CONCURRENCY_KEYS)
    return [ConcurrencyKey.from_row(r) for r in rows]


def invariant_violations() -> Plan[list[InvariantViolation]]:
    """``tf_invariant_violations`` rows (empty unless a rule is broken)."""
    rows = yield Statement(sql.INVARIANT_VIOLATIONS)
    return [InvariantViolation.from_row(r) for r in rows]
