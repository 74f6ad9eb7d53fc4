"""Request and response shapes of the JSON API (pydantic; they make the OpenAPI document).

Timestamps are RFC 3339 strings with an offset, read from the database (database time).
Seconds are floats. Filters and inputs that need an offset reject a naive time (400).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, model_validator

from taskforge import client, names

from ..queries import BULK_LIMIT, PAGE_LIMIT

#: A task state (taskforge_console.queries.TASK_STATES, which a test compares with this).
State = Literal["BLOCKED", "QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED"]
AttemptState = Literal["RUNNING", "SUCCEEDED", "FAILED", "ABANDONED", "CANCELLED"]


#: Bounds and formats the database enforces (docs/sql-api.md, "Limits"), stated in the document;
#: the name patterns are taskforge.names' (the database's, checked by tests/sql/test_name_rules.py).
TASK_TYPE_PATTERN = names.TASK_TYPE_PATTERN.pattern
QUEUE_PATTERN = names.QUEUE_PATTERN.pattern
PRIORITY_RANGE = (-32768, 32767)
MAX_ATTEMPTS_RANGE = (1, 1000)
EXTRA_ATTEMPTS_RANGE = (1, 1000)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests ---------------------------------------------------------------------------------
class SubmitBody(_Strict):
    """A task to admit through ``tf_submit``. The database validates every field (TF400 -> 400
    naming it): task_type registered, queue ``^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$``, priority
    -32768..32767, max_attempts 1..1000, payload a JSON object of at most 1 MiB, idempotency_key
    1..200 characters, timeout_seconds over 0 and at most 604800."""

    task_type: str = Field(pattern=TASK_TYPE_PATTERN, description="A registered task type.")
    payload: dict[str, Any] = Field(default_factory=dict, description="JSON object handed to the handler (<= 1 MiB).")
    queue: str = Field(default="default", pattern=QUEUE_PATTERN)
    priority: StrictInt = Field(default=0, ge=PRIORITY_RANGE[0], le=PRIORITY_RANGE[1], description="Higher first.")
    max_attempts: StrictInt = Field(default=3, ge=MAX_ATTEMPTS_RANGE[0], le=MAX_ATTEMPTS_RANGE[1])
    scheduled_at: AwareDatetime | None = Field(default=None, description="Earliest start (with an offset).")
    delay_seconds: float | None = Field(
        default=None,
        ge=0,
        le=client.MAX_DELAY_SECONDS,
        description="Earliest start = database time + this many seconds (not with scheduled_at).",
    )
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Same key and same request: the same task again (200); different request: 409.",
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=604800,
        description="This task's attempt timeout in seconds, in place of its task type's (none: the type's).",
    )


class CancelBody(_Strict):
    """Optional body of a single cancel."""

    reason: str | None = Field(default=None, description="Stored with the cancel request.")


class RetryBody(_Strict):
    """Optional body of a single retry."""

    extra_attempts: StrictInt = Field(
        default=1, ge=EXTRA_ATTEMPTS_RANGE[0], le=EXTRA_ATTEMPTS_RANGE[1], description="Attempts added."
    )


class TaskFilterModel(_Strict):
    """Which tasks: every condition given must hold. Time ranges are half-open [after, before)."""

    state: list[State] | None = Field(default=None, description="Any of these states.")
    queue: str | None = None
    task_type: str | None = None
    task_id: int | None = Field(default=None, ge=1, le=client.INT8_RANGE[1])
    created_after: AwareDatetime | None = None
    created_before: AwareDatetime | None = None
    finished_after: AwareDatetime | None = None
    finished_before: AwareDatetime | None = None


class TaskListQuery(TaskFilterModel):
    """Filters of ``GET /api/tasks`` plus the page: ``cursor`` is the ``next_cursor`` of the
    previous page (tasks with a smaller id follow), ``limit`` 1..500 (default 50)."""

    cursor: int | None = Field(default=None, ge=1, le=client.INT8_RANGE[1])
    limit: int = Field(default=50, ge=1, le=PAGE_LIMIT)


class _BulkBody(_Strict):
    # Exactly one selector, also in the document (the validator below gives the message).
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"oneOf": [{"required": ["task_ids"]}, {"required": ["filter"]}]}
    )

    task_ids: list[Annotated[StrictInt, Field(ge=1, le=client.INT8_RANGE[1])]] | None = Field(
        default=None,
        min_length=1,
        max_length=BULK_LIMIT,
        description=f"These tasks (1..{BULK_LIMIT} ids).",
    )
    filter: TaskFilterModel | None = Field(
        default=None,
        description=f"Or the tasks matching this filter, newest first, at most {BULK_LIMIT} per call "
        "(more=true in the answer: call again).",
    )

    @model_validator(mode="after")
    def _one_selector(self) -> _BulkBody:
        if (self.task_ids is None) == (self.filter is None):
            raise ValueError("give exactly one of task_ids and filter")
        return self


class BulkCancelBody(_BulkBody):
    """Cancel several tasks. With a filter, only tasks a cancel can change are taken (BLOCKED,
    QUEUED, RETRYING, and RUNNING without a cancel request)."""

    reason: str | None = None


class BulkRetryBody(_BulkBody):
    """Retry several tasks. With a filter, only FAILED and CANCELLED tasks are taken."""

    extra_attempts: StrictInt = Field(default=1, ge=EXTRA_ATTEMPTS_RANGE[0], le=EXTRA_ATTEMPTS_RANGE[1])


class TaskPath(BaseModel):
    task_id: int = Field(ge=0, le=client.INT8_RANGE[1], description="Task id.")


class QueuePath(BaseModel):
    queue: str = Field(pattern=QUEUE_PATTERN, description="Queue name.")


class WorkersQuery(_Strict):
    include_stopped: bool = Field(default=False, description="Also list deregistered workers.")


# --- responses --------------------------------------------------------------------------------
class Submitted(BaseModel):
    task_id: int
    state: State
    created: bool = Field(description="False for an idempotent replay (the stored task, whatever its state).")


class TaskSummary(BaseModel):
    task_id: int
    task_type: str
    queue: str
    priority: int
    state: State
    attempt_count: int
    max_attempts: int
    scheduled_at: dt.datetime
    created_at: dt.datetime
    updated_at: dt.datetime
    finished_at: dt.datetime | None
    cancel_requested: bool
    idempotency_key: str | None
    current_attempt_worker_id: UUID | None


class TaskPage(BaseModel):
    tasks: list[TaskSummary]
    next_cursor: int | None = Field(description="Pass as cursor for the next page; null on the last page.")


class Attempt(BaseModel):
    attempt_number: int
    worker_id: UUID
    worker_name: str | None
    state: AttemptState
    outcome: str | None
    started_at: dt.datetime
    lease_expires_at: dt.datetime
    finished_at: dt.datetime | None
    abandoned_at: dt.datetime | None
    duration_seconds: float | None
    recovery_lag_seconds: float | None = Field(description="abandoned_at - lease_expires_at (ABANDONED only).")
    result: Any = None
    error: Any = None


class TaskDetail(TaskSummary):
    attempts_left: int
    owner_worker_id: UUID | None
    lease_expires_at: dt.datetime | None
    cancel_reason: str | None
    fingerprint: str | None
    payload: dict[str, Any]
    result: Any = None
    last_error: Any = None
    current_attempt_state: AttemptState | None
    current_attempt_started_at: dt.datetime | None
    current_attempt_finished_at: dt.datetime | None
    notify_finished: bool = Field(description="Its end sends NOTIFY taskforge_finished (tf_submit's notify_finished).")
    traceparent: str | None = Field(description="The W3C trace context stored at submit, or null.")
    parents_pending: int = Field(description="Parent tasks not SUCCEEDED yet (a BLOCKED task waits for them; else 0).")
    has_children: bool = Field(description="Other tasks depend on this one (tf_submit's depends_on).")
    rate_key: str | None = Field(description="The flow-control rate key, or null.")
    concurrency_key: str | None = Field(description="The flow-control concurrency key, or null.")
    ordering_key: str | None = Field(description="The flow-control ordering key, or null.")
    attempts: list[Attempt]


class Cancelled(BaseModel):
    task_id: int
    task_state: State
    cancel_requested: bool = Field(description="RUNNING + true: the worker is told at its next renewal.")


class Retried(BaseModel):
    task_id: int
    task_state: State
    max_attempts: int


class Refusal(BaseModel):
    task_id: int
    code: Literal["invalid_argument", "not_found", "conflict"]
    message: str


class BulkCancelled(BaseModel):
    cancelled: list[Cancelled]
    refused: list[Refusal]
    more: bool = Field(description=f"The filter matched more than {BULK_LIMIT} tasks: call again.")


class BulkRetried(BaseModel):
    retried: list[Retried]
    refused: list[Refusal]
    more: bool = Field(description=f"The filter matched more than {BULK_LIMIT} tasks: call again.")


class QueueInfo(BaseModel):
    """A queue: its controls, live counts, and tasks finished in the last hour (database time)."""

    queue: str
    paused: bool
    paused_at: dt.datetime | None
    max_running: int | None = Field(description="Most RUNNING tasks of this queue at once (null: no limit).")
    QUEUED: int
    due: int = Field(description="QUEUED tasks whose scheduled_at has passed.")
    RUNNING: int
    RETRYING: int
    oldest_due_at: dt.datetime | None
    oldest_due_age_seconds: float | None = Field(description="Age of the oldest due QUEUED task (seconds).")
    finished_succeeded: int = Field(description="Tasks that SUCCEEDED in the last hour.")
    finished_failed: int = Field(description="Tasks that FAILED in the last hour.")
    finished_cancelled: int = Field(description="Tasks CANCELLED in the last hour.")


class QueueList(BaseModel):
    queues: list[QueueInfo]


class QueueChanged(BaseModel):
    queue: str
    paused: bool = Field(description="The queue's state after the call.")
    changed: bool = Field(description="False when it already was in that state.")


class Worker(BaseModel):
    worker_id: UUID
    name: str | None
    hostname: str | None
    pid: int | None
    queues: list[str] | None
    task_types: list[str] | None
    heartbeat_seconds: float
    started_at: dt.datetime
    last_heartbeat_at: dt.datetime
    stopped_at: dt.datetime | None
    seconds_since_heartbeat: float
    liveness: Literal["alive", "stale", "stopped"]
    running_tasks: int


class WorkerList(BaseModel):
    workers: list[Worker]


class ThroughputMinute(BaseModel):
    """One UTC minute of one queue (tf_throughput_per_minute); minutes with nothing finished have no row."""

    minute: dt.datetime
    queue: str
    attempts_finished: int
    attempts_succeeded: int
    attempts_failed: int = Field(description="FAILED and ABANDONED attempts.")
    first_attempts: int
    wait_p50_seconds: float | None = Field(description="Queue wait (first start - creation) of first attempts.")
    wait_p95_seconds: float | None


class WorkerCounts(BaseModel):
    alive: int
    stale: int
    stopped: int


class Stats(BaseModel):
    queues: list[QueueInfo]
    workers: WorkerCounts
    per_minute: list[ThroughputMinute] = Field(description="The last hour, oldest minute first.")
