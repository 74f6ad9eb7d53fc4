"""What the client returns: frozen dataclasses, one per kind of answer.

Write results (:class:`Submitted`, :class:`Cancelled`, :class:`Retried`, :class:`Scheduled`) and
read rows, one class per view (:class:`Task` with its :class:`Attempt` history, :class:`TaskRow`,
:class:`TaskBrief`, :class:`Worker`, :class:`Scheduler`, :class:`Queue`, :class:`Stats`, ...). A
class's fields are the view's columns in the order the client selects them, with the view's
names; :meth:`Row.as_dict` gives the same keys in the same order as plain values, which is
what the CLI's ``--json`` and the console's API print.

Time: timestamps are aware ``datetime`` values of database time (psycopg gives them in the
session's TimeZone); durations are float seconds; JSON documents (payloads, results, errors)
are the decoded values.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Self

from .checks import STATES

__all__ = [
    "Attempt",
    "Cancelled",
    "ConcurrencyKey",
    "Dependency",
    "FinishedCount",
    "InvariantViolation",
    "PeriodicSchedule",
    "Queue",
    "QueueCounts",
    "RateLimit",
    "Retried",
    "Row",
    "RunningTask",
    "Scheduled",
    "Scheduler",
    "Stats",
    "Submitted",
    "Task",
    "TaskBrief",
    "TaskRow",
    "TaskType",
    "Throughput",
    "ThroughputMinute",
    "Worker",
    "as_dict",
]


class Row:
    """Base of every result class: :meth:`from_row` and :meth:`as_dict`."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """The instance for one row of the client's query (a mapping of column to value)."""
        return cls(**row)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict``, in field order (values are not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


def as_dict(value: Row) -> dict[str, Any]:
    """``value.as_dict()``: any result or row as a plain ``dict`` (kept for callers of the
    client's former ``as_dict``)."""
    return value.as_dict()


# --- write results ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Submitted(Row):
    """Result of a submit: the task id, its state now, and whether this call created it
    (``False`` for an idempotent replay, which returns the stored task whatever its state)."""

    task_id: int
    state: str
    created: bool


@dataclass(frozen=True)
class Cancelled(Row):
    """Result of a cancel: the state after the call and whether a cancel is requested
    (``RUNNING`` + ``True`` means the worker is told at its next renewal)."""

    task_id: int
    task_state: str
    cancel_requested: bool


@dataclass(frozen=True)
class Retried(Row):
    """Result of a retry: the task is ``QUEUED`` again with this attempt budget."""

    task_id: int
    task_state: str
    max_attempts: int


@dataclass(frozen=True)
class Scheduled(Row):
    """Result of schedule_periodic: the schedule's next tick (database time, the instant its next
    task is enqueued) and whether this call created it (``False``: it replaced one)."""

    name: str
    next_fire_at: _dt.datetime
    created: bool


# --- tasks and attempts ----------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt(Row):
    """A ``tf_attempts`` row: one execution of a task. ``duration_seconds`` (finished attempts)
    and ``recovery_lag_seconds`` (``ABANDONED`` only: recovery time minus lease expiry) are
    float seconds of database time."""

    task_id: int
    attempt_number: int
    task_type: str
    queue: str
    worker_id: uuid.UUID
    worker_name: str | None
    state: str
    outcome: str | None
    started_at: _dt.datetime
    lease_expires_at: _dt.datetime
    finished_at: _dt.datetime | None
    abandoned_at: _dt.datetime | None
    duration_seconds: float | None
    recovery_lag_seconds: float | None
    result: Any
    error: Any


@dataclass(frozen=True)
class TaskRow(Row):
    """A ``tf_tasks`` row (what list_tasks and tasks_by_id return): the task, its current
    attempt, owner and lease, cancel request, result and last error."""

    task_id: int
    task_type: str
    queue: str
    priority: int
    state: str
    attempt_count: int
    max_attempts: int
    attempts_left: int
    scheduled_at: _dt.datetime
    created_at: _dt.datetime
    updated_at: _dt.datetime
    finished_at: _dt.datetime | None
    owner_worker_id: uuid.UUID | None
    lease_expires_at: _dt.datetime | None
    cancel_requested: bool
    cancel_reason: str | None
    idempotency_key: str | None
    fingerprint: str | None
    payload: dict[str, Any]
    result: Any
    last_error: Any
    current_attempt_state: str | None
    current_attempt_worker_id: uuid.UUID | None
    current_attempt_started_at: _dt.datetime | None
    current_attempt_finished_at: _dt.datetime | None
    notify_finished: bool
    traceparent: str | None
    parents_pending: int
    has_children: bool
    rate_key: str | None
    concurrency_key: str | None
    ordering_key: str | None


@dataclass(frozen=True)
class Task(TaskRow):
    """A ``tf_tasks`` row with its attempt history (what get_task returns), attempt 1 first."""

    attempts: tuple[Attempt, ...] = ()

    @classmethod
    def with_attempts(cls, row: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> Task:
        """The task of ``row`` with ``attempts`` (``tf_attempts`` rows)."""
        return cls(**row, attempts=tuple(Attempt.from_row(a) for a in attempts))

    def as_dict(self) -> dict[str, Any]:
        """As :meth:`Row.as_dict`, with ``attempts`` a list of attempt dicts."""
        values = super().as_dict()
        values["attempts"] = [a.as_dict() for a in self.attempts]
        return values


@dataclass(frozen=True)
class TaskBrief(Row):
    """The columns of ``taskforge list``'s table (list_tasks with ``brief``): no documents."""

    task_id: int
    task_type: str
    queue: str
    priority: int
    state: str
    attempt_count: int
    max_attempts: int
    scheduled_at: _dt.datetime
    created_at: _dt.datetime
    finished_at: _dt.datetime | None


@dataclass(frozen=True)
class RunningTask(Row):
    """A ``RUNNING`` task with its owner and current attempt (running_tasks)."""

    task_id: int
    task_type: str
    queue: str
    attempt_count: int
    max_attempts: int
    owner_worker_id: uuid.UUID | None
    lease_expires_at: _dt.datetime | None
    current_attempt_started_at: _dt.datetime | None
    cancel_requested: bool


# --- processes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Worker(Row):
    """A ``tf_workers`` row: one worker process start. ``liveness`` is ``alive``, ``stale``
    (three missed heartbeats, database time) or ``stopped`` (deregistered); ``queues`` and
    ``task_types`` ``None`` mean all."""

    worker_id: uuid.UUID
    name: str | None
    hostname: str | None
    pid: int | None
    queues: list[str] | None
    task_types: list[str] | None
    heartbeat_seconds: float
    started_at: _dt.datetime
    last_heartbeat_at: _dt.datetime
    stopped_at: _dt.datetime | None
    seconds_since_heartbeat: float
    liveness: str
    running_tasks: int


@dataclass(frozen=True)
class Scheduler(Row):
    """A ``tf_schedulers`` row: one scheduler process start, with the same ``liveness`` rule."""

    scheduler_id: uuid.UUID
    name: str | None
    hostname: str | None
    pid: int | None
    heartbeat_seconds: float
    started_at: _dt.datetime
    last_heartbeat_at: _dt.datetime
    stopped_at: _dt.datetime | None
    seconds_since_heartbeat: float
    liveness: str


# --- queues and statistics ---------------------------------------------------------------------
@dataclass(frozen=True)
class Queue(Row):
    """A ``tf_queues`` row: a queue with live work or a control row. ``max_running`` ``None`` is
    unlimited; ``oldest_due_at``/``oldest_due_age_seconds`` are ``None`` when nothing is due."""

    queue: str
    paused: bool
    paused_at: _dt.datetime | None
    max_running: int | None
    queued: int
    due: int
    running: int
    retrying: int
    oldest_due_at: _dt.datetime | None
    oldest_due_age_seconds: float | None
    aging_per_second: float | None


@dataclass(frozen=True)
class QueueCounts(Row):
    """Tasks of one queue per state (from ``tf_queue_stats``). :meth:`as_dict` names the counts
    by state, as the view does: ``{"queue", "BLOCKED", "QUEUED", ..., "CANCELLED", "total"}``."""

    queue: str
    blocked: int = 0
    queued: int = 0
    running: int = 0
    retrying: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    total: int = 0

    def count(self, state: str) -> int:
        """The number of tasks in ``state`` (one of :data:`taskforge.checks.STATES`)."""
        return int(getattr(self, state.lower()))

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, **{s: self.count(s) for s in STATES}, "total": self.total}


@dataclass(frozen=True)
class Throughput(Row):
    """A ``tf_throughput`` row: per window (60/300/900 s of database time) and queue, finished
    attempts, successes per second, run and queue-wait p50/p95 in seconds."""

    window_seconds: int
    queue: str
    attempts_finished: int
    attempts_succeeded: int
    attempts_failed: int
    succeeded_per_second: float
    run_p50_seconds: float | None
    run_p95_seconds: float | None
    wait_p50_seconds: float | None
    wait_p95_seconds: float | None


@dataclass(frozen=True)
class Stats(Row):
    """Counts per queue and state, and recent throughput (what stats returns)."""

    queues: tuple[QueueCounts, ...]
    throughput: tuple[Throughput, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"queues": [q.as_dict() for q in self.queues], "throughput": [t.as_dict() for t in self.throughput]}


@dataclass(frozen=True)
class ThroughputMinute(Row):
    """A ``tf_throughput_per_minute`` row: one UTC minute (an aware datetime at its start) of the
    last hour and one queue; ``wait_p50_seconds``/``wait_p95_seconds`` are ``None`` when no first
    attempt finished in it."""

    minute: _dt.datetime
    queue: str
    attempts_finished: int
    attempts_succeeded: int
    attempts_failed: int
    first_attempts: int
    wait_p50_seconds: float | None
    wait_p95_seconds: float | None


@dataclass(frozen=True)
class FinishedCount(Row):
    """Tasks of one queue that reached ``state`` (SUCCEEDED, FAILED or CANCELLED) in a window."""

    queue: str
    state: str
    tasks: int


@dataclass(frozen=True)
class TaskType(Row):
    """A ``tf_task_types`` row: a registered task type and its retry policy (seconds; jitter
    0..1)."""

    task_type: str
    backoff_base_seconds: float
    backoff_cap_seconds: float
    backoff_jitter: float
    description: str | None


@dataclass(frozen=True)
class PeriodicSchedule(Row):
    """A ``tf_periodic`` row: a schedule, its request, its next and last tick (database time) and
    the last tick's task (``None`` before the first tick, or once that task was pruned)."""

    name: str
    cron: str
    timezone: str
    task_type: str
    queue: str
    priority: int
    max_attempts: int
    payload: dict[str, Any]
    next_fire_at: _dt.datetime
    last_fire_at: _dt.datetime | None
    last_task_id: int | None
    last_task_state: str | None
    created_at: _dt.datetime
    updated_at: _dt.datetime


@dataclass(frozen=True)
class InvariantViolation(Row):
    """A ``tf_invariant_violations`` row (always none unless a state-machine rule is broken)."""

    rule: str
    task_id: int | None
    attempt_number: int | None
    detail: str


@dataclass(frozen=True)
class Dependency(Row):
    """A ``tf_task_dependencies`` row: one edge, the child waiting for the parent, with both
    tasks' type and state, the child's count of parents not yet SUCCEEDED and the parent's
    result."""

    child_task_id: int
    child_task_type: str
    child_state: str
    child_parents_pending: int
    parent_task_id: int
    parent_task_type: str
    parent_state: str
    parent_result: Any
    parent_finished_at: _dt.datetime | None


@dataclass(frozen=True)
class RateLimit(Row):
    """A ``tf_rate_limits`` row: a rate key's bucket (``per_second`` tokens per second,
    ``burst``), the tokens it holds now (database time) and its QUEUED tasks."""

    rate_key: str
    per_second: float
    burst: int
    tokens_now: float
    queued: int
    refilled_at: _dt.datetime
    created_at: _dt.datetime
    updated_at: _dt.datetime


@dataclass(frozen=True)
class ConcurrencyKey(Row):
    """A ``tf_concurrency_keys`` row: a key's limit (``None`` = unlimited), its RUNNING and
    QUEUED tasks, and when a claim last started one of them (fair rotation)."""

    concurrency_key: str
    max_running: int | None
    running: int
    queued: int
    last_claimed_at: _dt.datetime | None
    created_at: _dt.datetime
    updated_at: _dt.datetime
