"""The Python API over the TaskForge SQL API, for a psycopg ``Connection`` (used by the CLI, the
demo and the console); :mod:`taskforge.aio` has the same functions for an ``AsyncConnection``.

``conn`` is a psycopg connection, or any handle :func:`taskforge.adapters.psycopg_connection`
accepts (a SQLAlchemy ``Connection`` or ``Session``, a Django connection): the statements then
run in that handle's transaction and commit or roll back with the application's writes.
Autocommit makes each call its own transaction (see :func:`taskforge.database.connect`).
Writes call ``taskforge.tf_*`` functions with named arguments; reads use the views
``tf_tasks``, ``tf_attempts``, ``tf_workers``, ``tf_schedulers``, ``tf_queue_stats``,
``tf_queues``, ``tf_throughput``, ``tf_throughput_per_minute``, ``tf_task_types`` and
``tf_periodic`` only. The SQL text is in :mod:`taskforge.sql`, the rules of each call (checks,
statements, answers) in :mod:`taskforge.calls`; this module only sends and fetches.

Answers are frozen dataclasses (:mod:`taskforge.rows`): :class:`Submitted` and the other write
results, and one class per view for reads (:class:`Task`, :class:`TaskRow`, :class:`Worker`,
...); ``row.as_dict()`` gives the plain ``dict`` the CLI's ``--json`` prints.

Errors (:mod:`taskforge.errors`): a refusal of the database (SQLSTATE ``TF400`` invalid
argument, ``TF404`` no such task, ``TF409`` idempotency key reused with a different request or a
retry the state does not allow) raises :class:`Refused`, with the ``sqlstate``, the ``argument``
at fault (from the error's ``COLUMN``), the element ``index`` of a batch call and the
``message``; a ``TF404`` for a task is a :class:`TaskNotFound` (a ``LookupError``), as is a read
of a missing task. Before anything is sent, values PostgreSQL could not even receive as the
declared argument types raise :class:`InvalidArgument` (a ``Refused`` and a ``ValueError``,
see :mod:`taskforge.checks`). Nothing is written when any of these is raised. Other
``psycopg.Error`` s (connection lost, privilege missing) pass through.

Time: every timestamp is written and compared with the database clock. Read rows carry
``datetime`` values with a time zone (psycopg converts ``timestamptz`` to the session's
TimeZone); seconds are ``float``. The caller's clock is never sent, except as an explicit
``scheduled_at`` that the caller chooses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, Unpack

from psycopg.rows import dict_row

from . import calls
from .adapters import decode_json, psycopg_connection
from .calls import Plan, Statement
from .checks import (
    INT4_RANGE,
    INT8_RANGE,
    MAX_DELAY_SECONDS,
    MAX_PAYLOAD_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_SUBMIT_MANY,
    STATES,
    check_delay,
    check_payload,
    text_problem,
)
from .errors import InvalidArgument, Refused, TaskNotFound, refusals
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
    as_dict,
)
from .submission import SUBMIT_KEYS, SubmitOptions, SubmitRequest
from .waiting import wait

__all__ = [
    "INT4_RANGE",
    "INT8_RANGE",
    "MAX_DELAY_SECONDS",
    "MAX_PAYLOAD_BYTES",
    "MAX_PAYLOAD_DEPTH",
    "MAX_SUBMIT_MANY",
    "STATES",
    "SUBMIT_KEYS",
    "Attempt",
    "Cancelled",
    "ConcurrencyKey",
    "Dependency",
    "FinishedCount",
    "InvalidArgument",
    "InvariantViolation",
    "PeriodicSchedule",
    "Queue",
    "QueueCounts",
    "RateLimit",
    "Refused",
    "Retried",
    "RunningTask",
    "Scheduled",
    "Scheduler",
    "Stats",
    "SubmitRequest",
    "Submitted",
    "Task",
    "TaskBrief",
    "TaskNotFound",
    "TaskRow",
    "TaskType",
    "Throughput",
    "ThroughputMinute",
    "Worker",
    "as_dict",
    "attempts_for",
    "cancel",
    "check_delay",
    "check_payload",
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
    "text_problem",
    "throughput_per_minute",
    "unschedule_periodic",
    "wait",
    "workers",
]

T = TypeVar("T")


def _fetch(conn: Any, statement: Statement) -> calls.Rows:
    with refusals(), conn.cursor(row_factory=dict_row) as cur:
        decode_json(cur)
        cur.execute(statement.query, statement.params)
        rows: calls.Rows = cur.fetchall()
        return rows


def run(conn: Any, plan: Plan[T]) -> T:
    """Drive a plan of :mod:`taskforge.calls` on ``conn``: its checks run first (an
    :class:`InvalidArgument` leaves the connection untouched), then each statement is sent and
    its rows handed back; a refusal of the SQL API raises :class:`Refused`."""
    try:
        statement = next(plan)
        raw = None
        while True:
            try:
                if raw is None:
                    raw = psycopg_connection(conn)
                rows = _fetch(raw, statement)
            except BaseException as exc:  # noqa: BLE001  (re-raised by the plan)
                # Into the plan, so that its blocks (the submit's span) end here, in this context.
                statement = plan.throw(exc)
            else:
                statement = plan.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result


# --- admission ------------------------------------------------------------------------------------
def submit(
    conn: Any,
    task_type: str,
    payload: dict[str, Any] | None = None,
    **options: Unpack[SubmitOptions],
) -> Submitted:
    """Admit one task through ``tf_submit`` and return :class:`Submitted`.

    The arguments are those of :class:`SubmitRequest` (checked there): ``payload`` a JSON object
    (``None`` means ``{}``); ``scheduled_at`` (an aware ``datetime``) or ``delay_seconds`` (float
    seconds after the database's clock_timestamp(), 0..:data:`MAX_DELAY_SECONDS`) delays
    eligibility, at most one of them; ``priority`` and ``max_attempts`` ints (bounds
    -32768..32767 and 1..1000 are the database's); ``timeout_seconds`` (float seconds,
    0 < s <= 604800) overrides the task type's attempt timeout; ``notify_finished`` makes the
    task's end NOTIFY ``taskforge_finished``; ``traceparent`` is a W3C trace context stored with
    it; ``depends_on`` (task ids) makes it wait BLOCKED for its parents (docs/workflows.md);
    ``rate_key``, ``concurrency_key`` and ``ordering_key`` put it under flow control
    (docs/flow-control.md). All of it but ``notify_finished`` and ``traceparent`` is part of the
    request an idempotency key stands for.

    Raises :class:`Refused` (TF400 invalid argument; TF404 a parent that does not exist; TF409
    idempotency key reused with a different request); :class:`InvalidArgument` before anything
    is sent.
    """
    request = SubmitRequest(task_type, payload, **options)  # type: ignore[arg-type]  # None payload means {}
    return submit_request(conn, request)


def submit_request(conn: Any, request: SubmitRequest) -> Submitted:
    """:func:`submit` for a :class:`SubmitRequest` built beforehand (``tf_submit``)."""
    return run(conn, calls.submit(request))


def submit_many(conn: Any, requests: Sequence[SubmitRequest | Mapping[str, Any]]) -> list[Submitted]:
    """Admit 1..:data:`MAX_SUBMIT_MANY` tasks in one call of ``tf_submit_many`` (one statement,
    one transaction) and return one :class:`Submitted` per request, in input order.

    Each request is a :class:`SubmitRequest` or a mapping with its keys (:data:`SUBMIT_KEYS`,
    the keyword arguments of :func:`submit`)::

        {"task_type": "echo", "payload": {"n": 1}, "queue": "default", "priority": 0,
         "max_attempts": 3, "scheduled_at": <aware datetime> | "delay_seconds": 1.5,
         "idempotency_key": "order-42", "timeout_seconds": 60, "notify_finished": False}

    Only ``task_type`` is required; an omitted key (or ``payload=None``) takes :func:`submit`'s
    default. Every request obeys exactly ``tf_submit``'s validation and idempotency rules; a
    request repeating an earlier request's key with the same values resolves to that task
    (``created=False``).

    Raises :class:`InvalidArgument` naming the request (field ``"requests[3].priority"``, index
    3, 0-based) for the checks of :class:`SubmitRequest`, an unknown key or a request that is not
    a mapping, before anything is sent; :class:`Refused` with ``index`` and ``argument`` for the
    database's refusals (TF400, or ``argument == "requests"`` for an empty or too long list;
    TF409 for an idempotency key reused with a different request). Nothing is written when an
    error is raised.
    """
    return run(conn, calls.submit_many(requests))


def cancel(conn: Any, task_id: int, reason: str | None = None) -> Cancelled:
    """Cancel a task through ``tf_cancel``: QUEUED/RETRYING end CANCELLED now, RUNNING gets a
    cancel request (honoured at finalize or recovery), terminal states are returned unchanged.

    Raises :class:`TaskNotFound` for an unknown id, :class:`Refused` TF400 for a NULL id or a
    reason over 1000 characters; :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`
    or an unstorable reason.
    """
    return run(conn, calls.cancel(task_id, reason))


def retry(conn: Any, task_id: int, extra_attempts: int = 1) -> Retried:
    """Replay a FAILED or CANCELLED task through ``tf_retry`` (history kept; the budget becomes
    ``max(max_attempts, attempts so far + extra_attempts)``).

    Raises :class:`TaskNotFound` (unknown id), :class:`Refused` TF409 (the task is not
    FAILED/CANCELLED) or TF400 (extra_attempts outside 1..1000, or a budget above 10000);
    :class:`InvalidArgument` for a task id outside :data:`INT8_RANGE` or extra_attempts outside
    :data:`INT4_RANGE`.
    """
    return run(conn, calls.retry(task_id, extra_attempts))


# --- periodic schedules ---------------------------------------------------------------------------
def schedule_periodic(
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
    """Create or replace the periodic schedule ``name`` through ``tf_schedule_periodic``: at every
    tick of ``cron`` (5 fields, "minute hour day-of-month month day-of-week", read on the wall
    clock of ``timezone``, a name of pg_timezone_names) the scheduler enqueues one task with
    ``task_type``, ``payload``, ``queue``, ``priority`` and ``max_attempts`` (validated exactly as
    :func:`submit`). Replacing with the same cron and time zone keeps the next tick. DST, the
    catch-up policy and the day rule: docs/sql-api.md#tf_schedule_periodic.

    Raises :class:`Refused` TF400 naming the argument (a bad ``cron`` also names its field);
    :class:`InvalidArgument` for the client-side checks of :func:`submit`.
    """
    plan = calls.schedule_periodic(
        name, cron, task_type, payload, queue=queue, priority=priority, max_attempts=max_attempts, timezone=timezone
    )
    return run(conn, plan)


def unschedule_periodic(conn: Any, name: str) -> bool:
    """Delete the periodic schedule ``name`` through ``tf_unschedule_periodic``: ``True`` when it
    existed, ``False`` when there was none (not an error). Tasks it enqueued stay.

    Raises :class:`Refused` TF400 for a NULL or malformed name; :class:`InvalidArgument` for a
    string PostgreSQL cannot receive.
    """
    return run(conn, calls.unschedule_periodic(name))


def list_periodic(conn: Any) -> list[PeriodicSchedule]:
    """Every periodic schedule from ``tf_periodic``, by name (:class:`PeriodicSchedule`: cron,
    time zone, the request, next and last tick, the last tick's task and its state)."""
    return run(conn, calls.list_periodic())


# --- tasks --------------------------------------------------------------------------------------------
def get_task(conn: Any, task_id: int) -> Task:
    """One task from ``tf_tasks`` with its attempt history (:class:`Task`, ``attempts`` attempt 1
    first). Raises :class:`TaskNotFound`, or :class:`InvalidArgument` for an id outside
    :data:`INT8_RANGE`."""
    return run(conn, calls.get_task(task_id))


def list_tasks(
    conn: Any,
    *,
    state: str | None = None,
    queue: str | None = None,
    task_type: str | None = None,
    limit: int = 50,
    brief: bool = False,
) -> list[TaskRow] | list[TaskBrief]:
    """Tasks from ``tf_tasks``, newest first (by task id), filtered by exact state (any case),
    queue and task type (``None`` matches all), at most ``limit`` rows (1..10000):
    :class:`TaskRow` s, or with ``brief`` :class:`TaskBrief` s (no payload, result or error is
    fetched). Raises :class:`InvalidArgument` (a ``ValueError``) for a bad limit, state or
    filter string."""
    return run(conn, calls.list_tasks(state=state, queue=queue, task_type=task_type, limit=limit, brief=brief))


def tasks_by_id(conn: Any, task_ids: Iterable[int]) -> list[TaskRow]:
    """The ``tf_tasks`` rows of these ids (unknown ids are skipped), ordered by id.
    Raises :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`."""
    return run(conn, calls.tasks_by_id(task_ids))


def attempts_for(conn: Any, task_ids: Iterable[int]) -> list[Attempt]:
    """The ``tf_attempts`` rows of these tasks, ordered by task id and attempt number.
    Raises :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`."""
    return run(conn, calls.attempts_for(task_ids))


def running_tasks(conn: Any, *, limit: int = 1000) -> list[RunningTask]:
    """RUNNING tasks from ``tf_tasks``, oldest id first, at most ``limit`` (1..10000), with their
    owner, lease and current attempt's start. Raises :class:`InvalidArgument` for a bad limit."""
    return run(conn, calls.running_tasks(limit=limit))


# --- processes, queues, statistics ----------------------------------------------------------------
def workers(conn: Any, *, include_stopped: bool = False) -> list[Worker]:
    """Worker processes from ``tf_workers``, newest start first. ``liveness`` is ``alive``,
    ``stale`` (three missed heartbeats, database time) or ``stopped`` (deregistered; left out
    unless ``include_stopped``)."""
    return run(conn, calls.workers(include_stopped=include_stopped))


def schedulers(conn: Any, *, include_stopped: bool = False) -> list[Scheduler]:
    """Scheduler processes from ``tf_schedulers``, newest start first. ``liveness`` is ``alive``,
    ``stale`` (three missed heartbeats, database time) or ``stopped`` (a clean stop; left out
    unless ``include_stopped``)."""
    return run(conn, calls.schedulers(include_stopped=include_stopped))


def stats(conn: Any) -> Stats:
    """Counts and recent throughput: :class:`Stats` with ``queues`` (one :class:`QueueCounts`
    per queue, a count per state and the total) and ``throughput`` (the ``tf_throughput`` rows:
    per 60/300/900 s window of database time and queue, finished attempts, successes per second,
    run and queue-wait p50/p95 in seconds)."""
    return run(conn, calls.stats())


def throughput_per_minute(conn: Any) -> list[ThroughputMinute]:
    """Rows of ``tf_throughput_per_minute``, oldest minute first: per UTC minute of the last hour
    of database time and per queue, attempts finished, succeeded and failed, first attempts and
    their queue-wait p50/p95 (float seconds, ``None`` when no first attempt finished). Minutes in
    which nothing finished have no row."""
    return run(conn, calls.throughput_per_minute())


def finished_recently(conn: Any, seconds: float = 3600.0) -> list[FinishedCount]:
    """Tasks that reached a terminal state in the last ``seconds`` of database time, counted per
    queue and state (SUCCEEDED, FAILED, CANCELLED only; none for a queue without such tasks).
    Read along ``tasks_finished_idx``, so the cost follows the window, not the history. Raises
    :class:`InvalidArgument` unless 0 < ``seconds`` <= :data:`MAX_DELAY_SECONDS`."""
    return run(conn, calls.finished_recently(seconds))


def task_types(conn: Any) -> list[TaskType]:
    """The registered task types from ``tf_task_types`` (the only types ``tf_submit`` accepts),
    by name, with their retry policy."""
    return run(conn, calls.task_types())


def queues(conn: Any) -> list[Queue]:
    """Rows of ``tf_queues``, by queue name: queues with live work or a control row, paused or
    not, their limit (``None`` = unlimited), the counts queued, due, running, retrying, and the
    oldest due task's time and age (float seconds of database time; ``None`` when nothing is
    due)."""
    return run(conn, calls.queues())


def pause_queue(conn: Any, queue: str) -> bool:
    """Pause a queue through ``tf_pause_queue``: claims take none of its tasks until resumed;
    submits still succeed. Returns ``True`` when it was running (``False``: already paused).
    Raises :class:`Refused` TF400 for a malformed name; :class:`InvalidArgument` for text
    PostgreSQL cannot receive."""
    return run(conn, calls.pause_queue(queue))


def resume_queue(conn: Any, queue: str) -> bool:
    """Resume a paused queue through ``tf_resume_queue`` (idle workers are notified). Returns
    ``True`` when it was paused. Errors as :func:`pause_queue`."""
    return run(conn, calls.resume_queue(queue))


def set_queue_limit(conn: Any, queue: str, max_running: int | None) -> int | None:
    """Set (1..1000000) or clear (``None``) a queue's concurrency limit through
    ``tf_set_queue_limit``; returns the previous limit (``None`` = was unlimited). Raises
    :class:`Refused` TF400 (name or range); :class:`InvalidArgument` for a value outside the
    SQL ``int`` range or unstorable text."""
    return run(conn, calls.set_queue_limit(queue, max_running))


def set_queue_aging(conn: Any, queue: str, priority_per_second: float | None) -> float | None:
    """Set (0 < r <= 65535 priority points per second of waiting, database time) or clear
    (``None``) a queue's priority aging through ``tf_set_queue_aging``; returns the previous rate
    (``None`` = off). Raises :class:`Refused` TF400 (name or range)."""
    return run(conn, calls.set_queue_aging(queue, priority_per_second))


def dependencies(conn: Any, task_id: int) -> list[Dependency]:
    """The dependency edges of a task both ways (``tf_task_dependencies``): its parents (rows
    whose ``child_task_id`` is ``task_id``, with each parent's state and result) and its
    children (``parent_task_id`` is ``task_id``), by child then parent id."""
    return run(conn, calls.dependencies(task_id))


def set_rate_limit(
    conn: Any, rate_key: str, per_second: float | None, burst: int | None = None
) -> tuple[float | None, int | None]:
    """Set (``per_second`` > 0 tokens per second of database time, ``burst`` 1..1000000,
    default ``ceil(per_second)``) or remove (``per_second`` None) the token-bucket rate limit of a
    rate key through ``tf_set_rate_limit``; returns the previous ``(per_second, burst)``
    (``(None, None)`` when there was none). Raises :class:`Refused` TF400 naming the argument."""
    return run(conn, calls.set_rate_limit(rate_key, per_second, burst))


def set_concurrency_limit(conn: Any, concurrency_key: str, max_running: int | None) -> int | None:
    """Set (1..1000000) or clear (``None``) the limit of RUNNING tasks of a concurrency key
    through ``tf_set_concurrency_limit``; returns the previous limit (``None`` = unlimited).
    Raises :class:`Refused` TF400."""
    return run(conn, calls.set_concurrency_limit(concurrency_key, max_running))


def rate_limits(conn: Any) -> list[RateLimit]:
    """``tf_rate_limits`` rows (tokens available now, database time), by key."""
    return run(conn, calls.rate_limits())


def concurrency_keys(conn: Any) -> list[ConcurrencyKey]:
    """``tf_concurrency_keys`` rows (limit, RUNNING and QUEUED counts), by key."""
    return run(conn, calls.concurrency_keys())


def invariant_violations(conn: Any) -> list[InvariantViolation]:
    """Rows of ``tf_invariant_violations`` (rule, task_id, attempt_number, detail); always
    empty unless a state-machine rule is broken."""
    return run(conn, calls.invariant_violations())
