"""A small, UI-free Python API over the TaskForge SQL API (used by the CLI, the demo and the console).

Every function takes an open psycopg connection (autocommit recommended: each call is then its
own transaction; see :func:`taskforge.database.connect`) and returns plain values: dataclasses for
write results, ``dict`` rows for reads. The SQL text lives in :mod:`taskforge.sql`; writes call
``taskforge.tf_*`` functions with named arguments and reads use the views ``tf_tasks``,
``tf_attempts``, ``tf_workers``, ``tf_queue_stats``, ``tf_throughput``, ``tf_throughput_per_minute``,
``tf_task_types`` and ``tf_periodic`` only.

Errors: the database validates every argument and raises ``psycopg.Error`` with SQLSTATE
``TF400`` (invalid argument; the message starts with the argument name), ``TF404`` (no such
task) or ``TF409`` (idempotency key reused with a different request, or a retry that the task's
state does not allow). Reads of a missing task raise :class:`TaskNotFound` (also ``TF404``).
Before anything is sent, values PostgreSQL could not even receive as the declared argument types
raise :class:`InvalidArgument` (a ``ValueError``, message ``"<argument>: <problem>"`` like
TF400): integers outside ``int``/``bigint``, strings with NUL or unpaired surrogates, payloads
with NaN/Infinity or nested too deeply, and delays outside 0..:data:`MAX_DELAY_SECONDS`.

Time: every timestamp is written and compared with the database clock. Read rows carry
``datetime`` values with a time zone (psycopg converts ``timestamptz`` to the session's
TimeZone); seconds are ``float``. The caller's clock is never sent, except as an explicit
``scheduled_at`` that the caller chooses.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from . import sql

__all__ = [
    "INT4_RANGE",
    "INT8_RANGE",
    "MAX_DELAY_SECONDS",
    "MAX_PAYLOAD_BYTES",
    "MAX_PAYLOAD_DEPTH",
    "MAX_SUBMIT_MANY",
    "STATES",
    "SUBMIT_KEYS",
    "Cancelled",
    "InvalidArgument",
    "Retried",
    "Scheduled",
    "Submitted",
    "TaskNotFound",
    "as_dict",
    "attempts_for",
    "cancel",
    "check_delay",
    "check_payload",
    "finished_recently",
    "get_task",
    "invariant_violations",
    "list_periodic",
    "list_tasks",
    "retry",
    "running_tasks",
    "schedule_periodic",
    "schedulers",
    "stats",
    "submit",
    "submit_many",
    "task_types",
    "tasks_by_id",
    "text_problem",
    "throughput_per_minute",
    "unschedule_periodic",
    "workers",
]

#: Task states in lifecycle order (docs/design.md §2).
STATES = ("QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED")

#: Inclusive range of the SQL type ``int`` (int4): priority, max_attempts, extra_attempts. The
#: SQL parameters are ``numeric`` (any number reaches the database's own check, TF400); the
#: client refuses numbers beyond ``int`` before sending, as no column could hold them.
INT4_RANGE = (-(2**31), 2**31 - 1)
#: Inclusive range of the SQL type ``bigint`` (int8): task ids.
INT8_RANGE = (-(2**63), 2**63 - 1)
#: Longest ``delay_seconds`` that :func:`submit` accepts: 100 years of 365.25 days, in seconds.
MAX_DELAY_SECONDS = 100 * 365.25 * 86400
#: Deepest nesting of arrays and objects in a payload (the top-level object is level 1): the
#: database's limit (tf_submit refuses deeper payloads, TF400). Python's json module (used here
#: and by workers to decode payloads) recurses once per level and fails near its recursion limit
#: of about 1000, so payloads stay well below it.
MAX_PAYLOAD_DEPTH = 100
#: Largest payload, in bytes of its JSON text as jsonb prints it (UTF-8, ", " and ": "): the
#: database's limit (TF400), checked before sending so a client never makes the server parse a
#: document it will refuse.
MAX_PAYLOAD_BYTES = 1024 * 1024

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


class InvalidArgument(ValueError):
    """A value the database could not receive as its SQL argument type; nothing was sent.

    ``argument`` is the SQL argument name, ``problem`` the reason; ``str()`` is
    ``"<argument>: <problem>"`` (the shape of a TF400 message).
    """

    def __init__(self, argument: str, problem: str):
        super().__init__(f"{argument}: {problem}")
        self.argument = argument
        self.problem = problem


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


@dataclass(frozen=True)
class Scheduled:
    """Result of :func:`schedule_periodic`: the schedule's next tick (database time, the instant
    its next task is enqueued) and whether this call created it (``False``: it replaced one)."""

    name: str
    next_fire_at: _dt.datetime
    created: bool


def as_dict(value: Any) -> dict[str, Any]:
    """A result dataclass as a plain ``dict``."""
    return asdict(value)


def text_problem(value: str) -> str | None:
    """Why PostgreSQL ``text``/``jsonb`` cannot hold this string (a NUL character, or a lone
    surrogate code point, which has no UTF-8 encoding), or ``None`` when it can."""
    bad = _BAD_TEXT.search(value)
    if bad is None:
        return None
    char, where = bad.group(), bad.start()
    if char == "\x00":
        return f"contains a NUL character (U+0000) at position {where}, which PostgreSQL cannot store"
    return f"contains an unpaired surrogate (U+{ord(char):04X}) at position {where}, which is not valid Unicode"


def _int_arg(argument: str, value: Any, bounds: tuple[int, int], sql_type: str) -> Any:
    """``value`` as an ``int`` within the SQL type's range (``None`` passes: the database
    reports NULLs with TF400). Raises InvalidArgument."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(argument, f"must be an integer, got {type(value).__name__}")
    value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise InvalidArgument(argument, f"must fit the SQL type {sql_type} ({bounds[0]}..{bounds[1]}), got {value}")
    return value


def _finite_seconds(argument: str, value: Any) -> float:
    """``value`` as a finite float number of seconds (a real number too large for a float is
    infinite). Raises InvalidArgument naming ``argument`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(argument, f"must be a number of seconds, got {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = -math.inf if value < 0 else math.inf
    if not math.isfinite(seconds):
        raise InvalidArgument(argument, f"must be a finite number of seconds, got {seconds!r}")
    return seconds


def _seconds_arg(argument: str, value: Any) -> float | None:
    """``value`` as a finite float number of seconds; ``None`` passes (the range is the
    database's: TF400)."""
    return None if value is None else _finite_seconds(argument, value)


def _text_arg(argument: str, value: Any) -> Any:
    """Reject a ``str`` PostgreSQL cannot receive (other values pass to the database)."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise InvalidArgument(argument, problem)
    return value


def _json_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if text.isidentifier() and text.isascii():
        return f"{path}.{text}"
    shown = json.dumps(text[:40] + ("..." if len(text) > 40 else ""))  # ASCII: escapes bad characters
    return f"{path}[{shown}]"


def _short(path: str) -> str:
    return path if len(path) <= 100 else "$..." + path[-96:]


def check_payload(payload: Any) -> None:
    """Check that a payload (any JSON-shaped value) can be stored as ``jsonb``.

    Rejected, with the JSON path of the first problem (``$.a[0]``): floats that are NaN or
    +/-Infinity (JSON has no such numbers; ``float("1e400")`` is Infinity), keys and strings with
    a NUL character or an unpaired surrogate (PostgreSQL cannot store them), nesting deeper
    than :data:`MAX_PAYLOAD_DEPTH`, and more than :data:`MAX_PAYLOAD_BYTES` of JSON text in the
    form jsonb prints (``json.dumps(ensure_ascii=False)``: the same separators and escapes;
    jsonb's numbers are never shorter than Python's, except ``-0.0``, printed ``0.0``, which is
    allowed for). Whether it is an object is checked by the database (TF400). The walk is
    iterative: any depth is safe to check. Raises :class:`InvalidArgument` (argument ``payload``).
    """
    stack: list[tuple[Any, str, int]] = [(payload, "$", 1)]
    negative_zeros = 0
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
            negative_zeros += 1
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise InvalidArgument("payload", f"string at {_short(path)} {problem}")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidArgument(
                    "payload",
                    f"number at {_short(path)} is {value!r}; JSON numbers "
                    "must be finite (a number beyond +/-1.8e308 overflows "
                    "to Infinity)",
                )
        elif isinstance(value, (dict, list, tuple)):
            if depth > MAX_PAYLOAD_DEPTH:
                raise InvalidArgument("payload", f"nested more than {MAX_PAYLOAD_DEPTH} levels deep")
            children = []
            if isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(key, str):
                        problem = text_problem(key)
                        if problem:
                            raise InvalidArgument("payload", f"key at {_short(_json_path(path, key))} {problem}")
                    children.append((item, _json_path(path, key), depth + 1))
            else:
                children = [(item, _json_path(path, i), depth + 1) for i, item in enumerate(value)]
            stack.extend(reversed(children))  # report problems in document order
    try:
        size = len(json.dumps(payload, ensure_ascii=False).encode("utf-8")) - negative_zeros
    except (TypeError, ValueError):
        return  # not JSON-serialisable: psycopg reports it when sending
    if size > MAX_PAYLOAD_BYTES:
        raise InvalidArgument("payload", f"must be at most {MAX_PAYLOAD_BYTES} bytes as JSON text, got {size}")


def submit(
    conn: psycopg.Connection,
    task_type: str,
    payload: dict[str, Any] | None = None,
    *,
    queue: str = "default",
    priority: int = 0,
    max_attempts: int = 3,
    scheduled_at: _dt.datetime | None = None,
    delay_seconds: float | None = None,
    idempotency_key: str | None = None,
    timeout_seconds: float | None = None,
) -> Submitted:
    """Admit one task through ``tf_submit`` and return :class:`Submitted`.

    ``payload`` must be a JSON object (``dict``; ``None`` means ``{}``) that passes
    :func:`check_payload`. ``scheduled_at`` (an aware ``datetime``) or ``delay_seconds`` (float
    seconds after the database's clock_timestamp(), 0..:data:`MAX_DELAY_SECONDS`; a delay
    cannot be negative) delays eligibility; give at most one. A naive ``scheduled_at`` is
    rejected (it would be read in the session's TimeZone, which must not change the result).
    ``priority`` and ``max_attempts`` must be ints within :data:`INT4_RANGE`; their real bounds
    (-32768..32767, 1..1000) are the database's (TF400). ``timeout_seconds`` (float seconds,
    0 < s <= 604800) is this task's attempt timeout, overriding its task type's; ``None`` keeps
    the type's. It is part of the request an idempotency key stands for.

    Raises ``psycopg.Error`` with SQLSTATE TF400 (invalid argument) or TF409 (idempotency key
    reused with a different request); :class:`InvalidArgument` (a ``ValueError``) for the
    client-side checks above, before anything is sent.
    """
    if scheduled_at is not None and delay_seconds is not None:
        raise InvalidArgument("scheduled_at/delay_seconds", "give at most one")
    if scheduled_at is not None and scheduled_at.utcoffset() is None:
        raise InvalidArgument("scheduled_at", "needs a UTC offset (a naive time is ambiguous)")
    check_payload(payload)
    params = {
        "task_type": _text_arg("task_type", task_type),
        "payload": Jsonb({} if payload is None else payload),
        "queue": _text_arg("queue", queue),
        "priority": _int_arg("priority", priority, INT4_RANGE, "int"),
        "max_attempts": _int_arg("max_attempts", max_attempts, INT4_RANGE, "int"),
        "idempotency_key": _text_arg("idempotency_key", idempotency_key),
        "timeout_seconds": _seconds_arg("timeout_seconds", timeout_seconds),
    }
    if delay_seconds is not None:
        params["delay_seconds"] = check_delay(delay_seconds)
        row = sql.one_row(conn, sql.SUBMIT_DELAYED, params)
    else:
        params["scheduled_at"] = scheduled_at
        row = sql.one_row(conn, sql.SUBMIT, params)
    return Submitted(task_id=row[0], state=row[1], created=row[2])


#: The most requests :func:`submit_many` (``tf_submit_many``) takes in one call.
MAX_SUBMIT_MANY = 10000
#: The keys a :func:`submit_many` request may have.
SUBMIT_KEYS = frozenset(
    {
        "task_type",
        "payload",
        "queue",
        "priority",
        "max_attempts",
        "scheduled_at",
        "delay_seconds",
        "idempotency_key",
        "timeout_seconds",
    }
)


def submit_many(conn: psycopg.Connection, requests: Sequence[Mapping[str, Any]]) -> list[Submitted]:
    """Admit 1..:data:`MAX_SUBMIT_MANY` tasks in one call of ``tf_submit_many`` (one statement,
    one transaction) and return one :class:`Submitted` per request, in input order.

    Each request is a mapping with the keyword arguments of :func:`submit`::

        {"task_type": "echo", "payload": {"n": 1}, "queue": "default", "priority": 0,
         "max_attempts": 3, "scheduled_at": <aware datetime> | "delay_seconds": 1.5,
         "idempotency_key": "order-42", "timeout_seconds": 60}

    Only ``task_type`` is required; an omitted key (or ``payload=None``) takes
    :func:`submit`'s default. Every request obeys exactly ``tf_submit``'s validation and
    idempotency rules; a request repeating an earlier request's key with the same values
    resolves to that task (``created=False``). ``delay_seconds`` counts from the database's
    clock, as in :func:`submit`.

    Raises :class:`InvalidArgument` naming the request (``"requests[3].priority: ..."``,
    0-based) for the client-side checks of :func:`submit`, an unknown key, or a request that is
    not a mapping, before anything is sent; ``psycopg.Error`` with SQLSTATE TF400 (invalid
    argument, message ``"requests[3].<argument>: ..."``, or ``"requests: ..."`` for an empty or
    too long list) or TF409 (an idempotency key reused with a different request). Nothing is
    written when an error is raised.
    """
    elements: list[dict[str, Any]] = []
    delays: list[float | None] = []
    for i, request in enumerate(requests):
        where = f"requests[{i}]"
        if not isinstance(request, Mapping):
            raise InvalidArgument(where, f"must be a mapping, got {type(request).__name__}")
        unknown = sorted(str(k) for k in request if k not in SUBMIT_KEYS)
        if unknown:
            raise InvalidArgument(where, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(SUBMIT_KEYS))})")
        scheduled_at = request.get("scheduled_at")
        delay = request.get("delay_seconds")
        if scheduled_at is not None and delay is not None:
            raise InvalidArgument(f"{where}.scheduled_at/delay_seconds", "give at most one")
        element: dict[str, Any] = {}
        for key in ("task_type", "queue", "idempotency_key"):
            if key in request:
                element[key] = _text_arg(f"{where}.{key}", request[key])
        for key in ("priority", "max_attempts"):
            if key in request:
                element[key] = _int_arg(f"{where}.{key}", request[key], INT4_RANGE, "int")
        if "timeout_seconds" in request:
            element["timeout_seconds"] = _seconds_arg(f"{where}.timeout_seconds", request["timeout_seconds"])
        payload = request.get("payload")
        if payload is not None:
            try:
                check_payload(payload)
            except InvalidArgument as exc:
                raise InvalidArgument(f"{where}.{exc.argument}", exc.problem) from None
            element["payload"] = payload
        if scheduled_at is not None:
            if not isinstance(scheduled_at, _dt.datetime) or scheduled_at.utcoffset() is None:
                raise InvalidArgument(f"{where}.scheduled_at", "must be a datetime with a UTC offset")
            element["scheduled_at"] = scheduled_at.astimezone(_dt.UTC).isoformat()
        delays.append(None if delay is None else _delay_arg(f"{where}.delay_seconds", delay))
        elements.append(element)
    if any(d is not None for d in delays):
        cur = conn.execute(sql.SUBMIT_MANY_DELAYED, {"requests": Jsonb(elements), "delays": delays})
    else:
        cur = conn.execute(sql.SUBMIT_MANY, {"requests": Jsonb(elements)})
    return [Submitted(task_id=row[0], state=row[1], created=row[2]) for row in cur.fetchall()]


def _delay_arg(argument: str, delay_seconds: Any) -> float:
    try:
        return check_delay(delay_seconds)
    except InvalidArgument as exc:
        raise InvalidArgument(argument, exc.problem) from None


def check_delay(delay_seconds: Any) -> float:
    """``delay_seconds`` as a float: a finite number of seconds from 0 to
    :data:`MAX_DELAY_SECONDS` (100 years). Raises :class:`InvalidArgument`."""
    value = _finite_seconds("delay_seconds", delay_seconds)
    if not 0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidArgument(
            "delay_seconds", f"must be between 0 and {MAX_DELAY_SECONDS:.0f} seconds (100 years), got {value:g}"
        )
    return value


def cancel(conn: psycopg.Connection, task_id: int, reason: str | None = None) -> Cancelled:
    """Cancel a task through ``tf_cancel``: QUEUED/RETRYING end CANCELLED now, RUNNING gets a
    cancel request (honoured at finalize or recovery), terminal states are returned unchanged.

    Raises ``psycopg.Error`` TF404 for an unknown id, TF400 for a NULL id;
    :class:`InvalidArgument` for an id outside :data:`INT8_RANGE` or an unstorable reason.
    """
    params = {"task_id": _int_arg("task_id", task_id, INT8_RANGE, "bigint"), "reason": _text_arg("reason", reason)}
    row = sql.one_row(conn, sql.CANCEL, params)
    return Cancelled(task_id=task_id, task_state=row[0], cancel_requested=row[1])


def retry(conn: psycopg.Connection, task_id: int, extra_attempts: int = 1) -> Retried:
    """Replay a FAILED or CANCELLED task through ``tf_retry`` (history kept; the budget becomes
    ``max(max_attempts, attempts so far + extra_attempts)``).

    Raises ``psycopg.Error`` TF404 (unknown id), TF409 (the task is not FAILED/CANCELLED),
    TF400 (extra_attempts outside 1..1000, or a budget above 10000); :class:`InvalidArgument`
    for a task id outside :data:`INT8_RANGE` or extra_attempts outside :data:`INT4_RANGE`.
    """
    params = {
        "task_id": _int_arg("task_id", task_id, INT8_RANGE, "bigint"),
        "extra_attempts": _int_arg("extra_attempts", extra_attempts, INT4_RANGE, "int"),
    }
    row = sql.one_row(conn, sql.RETRY, params)
    return Retried(task_id=task_id, task_state=row[0], max_attempts=row[1])


def schedule_periodic(
    conn: psycopg.Connection,
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

    Raises ``psycopg.Error`` with SQLSTATE TF400 naming the argument (a bad ``cron`` also names
    its field); :class:`InvalidArgument` for the client-side checks of :func:`submit`.
    """
    check_payload(payload)
    params = {
        "name": _text_arg("name", name),
        "cron": _text_arg("cron", cron),
        "task_type": _text_arg("task_type", task_type),
        "payload": Jsonb({} if payload is None else payload),
        "queue": _text_arg("queue", queue),
        "priority": _int_arg("priority", priority, INT4_RANGE, "int"),
        "max_attempts": _int_arg("max_attempts", max_attempts, INT4_RANGE, "int"),
        "timezone": _text_arg("timezone", timezone),
    }
    row = sql.one_row(conn, sql.SCHEDULE_PERIODIC, params)
    return Scheduled(name=name, next_fire_at=row[0], created=row[1])


def unschedule_periodic(conn: psycopg.Connection, name: str) -> bool:
    """Delete the periodic schedule ``name`` through ``tf_unschedule_periodic``: ``True`` when it
    existed, ``False`` when there was none (not an error). Tasks it enqueued stay.

    Raises ``psycopg.Error`` TF400 for a NULL or malformed name; :class:`InvalidArgument` for a
    string PostgreSQL cannot receive.
    """
    return bool(sql.one_value(conn, sql.UNSCHEDULE_PERIODIC, {"name": _text_arg("name", name)}))


def list_periodic(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every periodic schedule from ``tf_periodic``, by name: ``cron``, ``timezone``, the request
    (``task_type``, ``queue``, ``priority``, ``max_attempts``, ``payload``), ``next_fire_at``,
    ``last_fire_at``, ``last_task_id`` and ``last_task_state`` (``None`` before the first tick, or
    once that task was pruned), ``created_at``, ``updated_at``."""
    return _dict_rows(conn, sql.PERIODIC_LIST)


def _dict_rows(conn: psycopg.Connection, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def get_task(conn: psycopg.Connection, task_id: int) -> dict[str, Any]:
    """One task from ``tf_tasks`` with its attempt history under ``"attempts"`` (a list of
    ``tf_attempts`` rows, attempt 1 first). Raises :class:`TaskNotFound`, or
    :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`."""
    rows = _dict_rows(conn, sql.TASK_GET, {"task_id": _int_arg("task_id", task_id, INT8_RANGE, "bigint")})
    if not rows:
        raise TaskNotFound(task_id)
    task = rows[0]
    task["attempts"] = attempts_for(conn, [task_id])
    return task


def list_tasks(
    conn: psycopg.Connection,
    *,
    state: str | None = None,
    queue: str | None = None,
    task_type: str | None = None,
    limit: int = 50,
    brief: bool = False,
) -> list[dict[str, Any]]:
    """Tasks from ``tf_tasks``, newest first (by task id), filtered by exact state, queue and
    task type (``None`` matches all), at most ``limit`` rows (1..10000). Every column of
    :func:`get_task` (but ``attempts``); with ``brief``, only ``task_id``, ``task_type``,
    ``queue``, ``priority``, ``state``, ``attempt_count``, ``max_attempts``, ``scheduled_at``,
    ``created_at`` and ``finished_at`` (no payload, result or error is fetched). Raises
    :class:`InvalidArgument` (a ``ValueError``) for a bad limit, state or filter string."""
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or not 1 <= limit <= 10000:
        raise InvalidArgument("limit", f"must be an integer between 1 and 10000, got {limit!r}")
    if state is not None:
        state = state.upper()
        if state not in STATES:
            raise InvalidArgument("state", f"must be one of {', '.join(STATES)}, got {state!r}")
    _text_arg("queue", queue)
    _text_arg("task_type", task_type)
    return _dict_rows(
        conn,
        sql.TASKS_LIST_BRIEF if brief else sql.TASKS_LIST,
        {"state": state, "queue": queue, "task_type": task_type, "limit": limit},
    )


def tasks_by_id(conn: psycopg.Connection, task_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The ``tf_tasks`` rows of these ids (unknown ids are skipped), ordered by id.
    Raises :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`."""
    ids = [_int_arg("task_ids", t, INT8_RANGE, "bigint") for t in task_ids]
    return _dict_rows(conn, sql.TASKS_BY_ID, {"task_ids": ids})


def attempts_for(conn: psycopg.Connection, task_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The ``tf_attempts`` rows of these tasks, ordered by task id and attempt number.
    ``duration_seconds`` and ``recovery_lag_seconds`` (ABANDONED only) are float seconds of
    database time. Raises :class:`InvalidArgument` for an id outside :data:`INT8_RANGE`."""
    ids = [_int_arg("task_ids", t, INT8_RANGE, "bigint") for t in task_ids]
    return _dict_rows(conn, sql.ATTEMPTS_FOR_TASKS, {"task_ids": ids})


def workers(conn: psycopg.Connection, *, include_stopped: bool = False) -> list[dict[str, Any]]:
    """Worker processes from ``tf_workers``, newest start first. ``liveness`` is ``alive``,
    ``stale`` (three missed heartbeats, database time) or ``stopped`` (deregistered; left out
    unless ``include_stopped``)."""
    return _dict_rows(conn, sql.WORKERS_LIST, {"include_stopped": include_stopped})


def schedulers(conn: psycopg.Connection, *, include_stopped: bool = False) -> list[dict[str, Any]]:
    """Scheduler processes from ``tf_schedulers``, newest start first. ``liveness`` is ``alive``,
    ``stale`` (three missed heartbeats, database time) or ``stopped`` (a clean stop; left out
    unless ``include_stopped``)."""
    return _dict_rows(conn, sql.SCHEDULERS_LIST, {"include_stopped": include_stopped})


def stats(conn: psycopg.Connection) -> dict[str, Any]:
    """Counts and recent throughput.

    Returns ``{"queues": [...], "throughput": [...]}``: ``queues`` holds one row per queue with
    a count per state (keys ``queue``, ``total`` and each of :data:`STATES`); ``throughput``
    holds the ``tf_throughput`` rows (per 60/300/900 s window of database time and queue:
    finished attempts, successes per second, run and queue-wait p50/p95 in seconds).
    """
    per_queue: dict[str, dict[str, Any]] = {}
    for row in _dict_rows(conn, sql.QUEUE_STATS):
        entry = per_queue.setdefault(row["queue"], {"queue": row["queue"], **{s: 0 for s in STATES}, "total": 0})
        entry[row["state"]] = int(row["tasks"])
        entry["total"] += int(row["tasks"])
    return {"queues": list(per_queue.values()), "throughput": _dict_rows(conn, sql.THROUGHPUT)}


def throughput_per_minute(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Rows of ``tf_throughput_per_minute``, oldest minute first: per UTC minute (``minute``, an
    aware datetime at the start of the minute) of the last hour of database time and per queue,
    ``attempts_finished``, ``attempts_succeeded``, ``attempts_failed``, ``first_attempts`` and
    ``wait_p50_seconds``/``wait_p95_seconds`` (float seconds, None when no first attempt
    finished). Minutes in which nothing finished have no row."""
    return _dict_rows(conn, sql.THROUGHPUT_PER_MINUTE)


def finished_recently(conn: psycopg.Connection, seconds: float = 3600.0) -> list[dict[str, Any]]:
    """Tasks that reached a terminal state in the last ``seconds`` of database time, counted per
    queue and state: rows ``{"queue", "state", "tasks"}`` (states SUCCEEDED, FAILED, CANCELLED
    only; none for a queue without such tasks). Read along ``tasks_finished_idx``, so the cost
    follows the window, not the history. Raises :class:`InvalidArgument` unless
    0 < ``seconds`` <= :data:`MAX_DELAY_SECONDS`."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real) or not 0 < seconds <= MAX_DELAY_SECONDS:
        raise InvalidArgument("seconds", f"must be a number of seconds above 0, got {seconds!r}")
    return _dict_rows(conn, sql.TASKS_FINISHED_RECENTLY, {"seconds": float(seconds)})


def task_types(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """The registered task types from ``tf_task_types`` (the only types ``tf_submit`` accepts),
    by name: ``task_type``, ``backoff_base_seconds``, ``backoff_cap_seconds`` (seconds),
    ``backoff_jitter`` (0..1) and ``description`` (or None)."""
    return _dict_rows(conn, sql.TASK_TYPES)


def running_tasks(conn: psycopg.Connection, *, limit: int = 1000) -> list[dict[str, Any]]:
    """RUNNING tasks from ``tf_tasks``, oldest id first, at most ``limit`` (1..10000): id, type,
    queue, attempts, ``owner_worker_id``, ``lease_expires_at``, ``current_attempt_started_at``
    and ``cancel_requested``. Raises :class:`InvalidArgument` for a bad limit."""
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or not 1 <= limit <= 10000:
        raise InvalidArgument("limit", f"must be an integer between 1 and 10000, got {limit!r}")
    return _dict_rows(conn, sql.RUNNING_TASKS, {"limit": limit})


def queues(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Rows of ``tf_queues``, by queue name: queues with live work or a control row, with
    ``paused`` (bool), ``paused_at``, ``max_running`` (``None`` = unlimited), the counts
    ``queued``, ``due``, ``running``, ``retrying``, and ``oldest_due_at`` /
    ``oldest_due_age_seconds`` (float seconds of database time; ``None`` when nothing is due)."""
    return _dict_rows(conn, sql.QUEUES_LIST)


def pause_queue(conn: psycopg.Connection, queue: str) -> bool:
    """Pause a queue through ``tf_pause_queue``: claims take none of its tasks until resumed;
    submits still succeed. Returns ``True`` when it was running (``False``: already paused).
    Raises ``psycopg.Error`` TF400 for a malformed name; :class:`InvalidArgument` for text
    PostgreSQL cannot receive."""
    return bool(sql.one_value(conn, sql.PAUSE_QUEUE, {"queue": _text_arg("queue", queue)}))


def resume_queue(conn: psycopg.Connection, queue: str) -> bool:
    """Resume a paused queue through ``tf_resume_queue`` (idle workers are notified). Returns
    ``True`` when it was paused. Errors as :func:`pause_queue`."""
    return bool(sql.one_value(conn, sql.RESUME_QUEUE, {"queue": _text_arg("queue", queue)}))


def set_queue_limit(conn: psycopg.Connection, queue: str, max_running: int | None) -> int | None:
    """Set (1..1000000) or clear (``None``) a queue's concurrency limit through
    ``tf_set_queue_limit``; returns the previous limit (``None`` = was unlimited). Raises
    ``psycopg.Error`` TF400 (name or range); :class:`InvalidArgument` for a value outside the
    SQL ``int`` range or unstorable text."""
    params = {
        "queue": _text_arg("queue", queue),
        "max_running": _int_arg("max_running", max_running, INT4_RANGE, "int"),
    }
    value = sql.one_value(conn, sql.SET_QUEUE_LIMIT, params)
    return None if value is None else int(value)


def invariant_violations(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Rows of ``tf_invariant_violations`` (rule, task_id, attempt_number, detail); always
    empty unless a state-machine rule is broken."""
    return _dict_rows(conn, sql.INVARIANT_VIOLATIONS)
