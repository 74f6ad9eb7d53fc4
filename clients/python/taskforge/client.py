"""A small, UI-free Python API over the TaskForge SQL API (used by the CLI, the demo and the console).

Every function takes an open psycopg connection (autocommit recommended: each call is then its
own transaction; see :func:`taskforge.db.connect`) and returns plain values: dataclasses for
write results, ``dict`` rows for reads. The SQL text lives in :mod:`taskforge.sql`; writes call
``taskforge.tf_*`` functions with named arguments and reads use the views ``tf_tasks``,
``tf_attempts``, ``tf_workers``, ``tf_queue_stats`` and ``tf_throughput`` only.

Errors: the database validates every argument and raises ``psycopg.Error`` with SQLSTATE
``TF400`` (invalid argument; the message starts with the argument name), ``TF404`` (no such
task) or ``TF409`` (idempotency key reused with a different request, or a retry that the task's
state does not allow). Reads of a missing task raise :class:`TaskNotFound` (also ``TF404``).

Time: every timestamp is written and compared with the database clock. Read rows carry
``datetime`` values with a time zone (psycopg converts ``timestamptz`` to the session's
TimeZone); seconds are ``float``. The caller's clock is never sent, except as an explicit
``scheduled_at`` that the caller chooses.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass
from typing import Any, Iterable

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from . import sql

__all__ = [
    "STATES", "TaskNotFound", "Submitted", "Cancelled", "Retried",
    "submit", "cancel", "retry", "get_task", "list_tasks", "tasks_by_id", "attempts_for",
    "workers", "stats", "invariant_violations", "as_dict",
]

#: Task states in lifecycle order (DESIGN.md §2).
STATES = ("QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED")


class TaskNotFound(LookupError):
    """No task with that id (the read-side twin of SQLSTATE TF404)."""

    sqlstate = "TF404"

    def __init__(self, task_id: int):
        super().__init__(f"task_id: no task {task_id}")
        self.task_id = task_id


@dataclass(frozen=True)
class Submitted:
    """Result of :func:`submit`: the task id, its state now, and whether this call created it
    (``False`` for an idempotent replay, which returns the stored task whatever its state)."""

    task_id: int
    state: str
    created: bool


@dataclass(frozen=True)
class Cancelled:
    """Result of :func:`cancel`: the state after the call and whether a cancel is requested
    (``RUNNING`` + ``True`` means the worker is told at its next renewal)."""

    task_id: int
    task_state: str
    cancel_requested: bool


@dataclass(frozen=True)
class Retried:
    """Result of :func:`retry`: the task is ``QUEUED`` again with this attempt budget."""

    task_id: int
    task_state: str
    max_attempts: int


def as_dict(value: Any) -> dict:
    """A result dataclass as a plain ``dict``."""
    return asdict(value)


def submit(conn: psycopg.Connection, task_type: str, payload: dict | None = None, *,
           queue: str = "default", priority: int = 0, max_attempts: int = 3,
           scheduled_at: _dt.datetime | None = None, delay_seconds: float | None = None,
           idempotency_key: str | None = None) -> Submitted:
    """Admit one task through ``tf_submit`` and return :class:`Submitted`.

    ``payload`` must be a JSON object (``dict``; ``None`` means ``{}``). ``scheduled_at`` (an
    aware ``datetime``) or ``delay_seconds`` (seconds after the database's clock_timestamp())
    delays eligibility; give at most one. A naive ``scheduled_at`` raises ``ValueError`` (it
    would be read in the session's TimeZone, which must not change the result).

    Raises ``psycopg.Error`` with SQLSTATE TF400 (invalid argument) or TF409 (idempotency key
    reused with a different request); ``ValueError`` for the two client-side checks above.
    """
    if scheduled_at is not None and delay_seconds is not None:
        raise ValueError("scheduled_at and delay_seconds: give at most one")
    if scheduled_at is not None and scheduled_at.utcoffset() is None:
        raise ValueError("scheduled_at: needs a UTC offset (a naive time is ambiguous)")
    params = {
        "task_type": task_type,
        "payload": Jsonb({} if payload is None else payload),
        "queue": queue,
        "priority": priority,
        "max_attempts": max_attempts,
        "idempotency_key": idempotency_key,
    }
    if delay_seconds is not None:
        params["delay_seconds"] = float(delay_seconds)
        row = conn.execute(sql.SUBMIT_DELAYED, params).fetchone()
    else:
        params["scheduled_at"] = scheduled_at
        row = conn.execute(sql.SUBMIT, params).fetchone()
    return Submitted(task_id=row[0], state=row[1], created=row[2])


def cancel(conn: psycopg.Connection, task_id: int, reason: str | None = None) -> Cancelled:
    """Cancel a task through ``tf_cancel``: QUEUED/RETRYING end CANCELLED now, RUNNING gets a
    cancel request (honoured at finalize or recovery), terminal states are returned unchanged.

    Raises ``psycopg.Error`` TF404 for an unknown id, TF400 for a NULL id.
    """
    row = conn.execute(sql.CANCEL, {"task_id": task_id, "reason": reason}).fetchone()
    return Cancelled(task_id=task_id, task_state=row[0], cancel_requested=row[1])


def retry(conn: psycopg.Connection, task_id: int, extra_attempts: int = 1) -> Retried:
    """Replay a FAILED or CANCELLED task through ``tf_retry`` (history kept; the budget becomes
    ``max(max_attempts, attempts so far + extra_attempts)``).

    Raises ``psycopg.Error`` TF404 (unknown id), TF409 (the task is not FAILED/CANCELLED),
    TF400 (extra_attempts outside 1..1000, or a budget above 10000).
    """
    row = conn.execute(sql.RETRY, {"task_id": task_id, "extra_attempts": extra_attempts}).fetchone()
    return Retried(task_id=task_id, task_state=row[0], max_attempts=row[1])


def _dict_rows(conn: psycopg.Connection, query: str, params: dict | None = None) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def get_task(conn: psycopg.Connection, task_id: int) -> dict:
    """One task from ``tf_tasks`` with its attempt history under ``"attempts"`` (a list of
    ``tf_attempts`` rows, attempt 1 first). Raises :class:`TaskNotFound`."""
    rows = _dict_rows(conn, sql.TASK_GET, {"task_id": task_id})
    if not rows:
        raise TaskNotFound(task_id)
    task = rows[0]
    task["attempts"] = attempts_for(conn, [task_id])
    return task


def list_tasks(conn: psycopg.Connection, *, state: str | None = None, queue: str | None = None,
               task_type: str | None = None, limit: int = 50) -> list[dict]:
    """Tasks from ``tf_tasks``, newest first (by task id), filtered by exact state, queue and
    task type (``None`` matches all), at most ``limit`` rows (1..10000, else ``ValueError``)."""
    if not 1 <= limit <= 10000:
        raise ValueError(f"limit: must be between 1 and 10000, got {limit}")
    if state is not None:
        state = state.upper()
        if state not in STATES:
            raise ValueError(f"state: must be one of {', '.join(STATES)}, got {state!r}")
    return _dict_rows(conn, sql.TASKS_LIST,
                      {"state": state, "queue": queue, "task_type": task_type, "limit": limit})


def tasks_by_id(conn: psycopg.Connection, task_ids: Iterable[int]) -> list[dict]:
    """The ``tf_tasks`` rows of these ids (unknown ids are skipped), ordered by id."""
    return _dict_rows(conn, sql.TASKS_BY_ID, {"task_ids": list(task_ids)})


def attempts_for(conn: psycopg.Connection, task_ids: Iterable[int]) -> list[dict]:
    """The ``tf_attempts`` rows of these tasks, ordered by task id and attempt number.
    ``duration_seconds`` and ``recovery_lag_seconds`` (ABANDONED only) are float seconds of
    database time."""
    return _dict_rows(conn, sql.ATTEMPTS_FOR_TASKS, {"task_ids": list(task_ids)})


def workers(conn: psycopg.Connection, *, include_stopped: bool = False) -> list[dict]:
    """Worker processes from ``tf_workers``, newest start first. ``liveness`` is ``alive``,
    ``stale`` (three missed heartbeats, database time) or ``stopped`` (deregistered; left out
    unless ``include_stopped``)."""
    return _dict_rows(conn, sql.WORKERS_LIST, {"include_stopped": include_stopped})


def stats(conn: psycopg.Connection) -> dict:
    """Counts and recent throughput.

    Returns ``{"queues": [...], "throughput": [...]}``: ``queues`` holds one row per queue with
    a count per state (keys ``queue``, ``total`` and each of :data:`STATES`); ``throughput``
    holds the ``tf_throughput`` rows (per 60/300/900 s window of database time and queue:
    finished attempts, successes per second, run and queue-wait p50/p95 in seconds).
    """
    per_queue: dict[str, dict] = {}
    for row in _dict_rows(conn, sql.QUEUE_STATS):
        entry = per_queue.setdefault(row["queue"], {"queue": row["queue"], **{s: 0 for s in STATES}, "total": 0})
        entry[row["state"]] = int(row["tasks"])
        entry["total"] += int(row["tasks"])
    return {"queues": list(per_queue.values()), "throughput": _dict_rows(conn, sql.THROUGHPUT)}


def invariant_violations(conn: psycopg.Connection) -> list[dict]:
    """Rows of ``tf_invariant_violations`` (rule, task_id, attempt_number, detail); always
    empty unless a state-machine rule is broken."""
    return _dict_rows(conn, sql.INVARIANT_VIOLATIONS)
