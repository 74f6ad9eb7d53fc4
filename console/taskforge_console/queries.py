"""The console's reads and actions, shared by the JSON API and the pages.

Each function takes a psycopg connection from :class:`taskforge_console.db.Database` (``read``
for reads, ``act`` for actions) and returns plain values. SQL text lives in
:mod:`taskforge.sql` (console section); single-task actions reuse :mod:`taskforge.client`.
Reads touch only ``taskforge.tf_*`` views, actions only ``taskforge.tf_*`` functions.

Dependencies and flow control read ``tf_task_dependencies``, ``tf_rate_limits`` and
``tf_concurrency_keys`` (statements ``CONSOLE_FLOW_*``) and act through
:func:`taskforge.client.set_rate_limit` and :func:`taskforge.client.set_concurrency_limit`.

Time: filters are compared with database timestamps; ages are computed by the database.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg.rows import dict_row

from taskforge import client, sql
from taskforge.errors import Refused, refusals

from .refusals import refusal_status

__all__ = [
    "BULK_LIMIT",
    "CANCELLABLE_STATES",
    "DEPENDENCY_LIST_LIMIT",
    "FINISHED_WINDOW_SECONDS",
    "FLOW_GRAPH_LIMIT",
    "FLOW_LIST_LIMIT",
    "PAGE_LIMIT",
    "RETRYABLE_STATES",
    "TASK_STATES",
    "BulkOutcome",
    "Dependencies",
    "FlowComponent",
    "TaskFilter",
    "bulk_cancel",
    "bulk_retry",
    "concurrency_keys",
    "count_matching",
    "flow_component",
    "ids_matching",
    "list_tasks",
    "queues",
    "rate_limits",
    "set_concurrency_limit",
    "set_rate_limit",
    "task_dependencies",
    "worker_counts",
]

#: Most tasks one bulk call changes (by ids or by filter). A filter matching more changes the
#: newest BULK_LIMIT and reports ``more=True``; call again to go on.
BULK_LIMIT = 10000
#: Largest page of the task list.
PAGE_LIMIT = 500
#: Every task state, in lifecycle order: the domain ``taskforge.task_state``
#: (db/schema/15_domains.sql), as :data:`taskforge.client.STATES` lists it.
TASK_STATES: tuple[str, ...] = client.STATES
#: States a cancel can change (a RUNNING task gets a cancel request; a BLOCKED one ends with its
#: BLOCKED descendants, tf_cancel); others are left alone.
CANCELLABLE_STATES = ("BLOCKED", "QUEUED", "RUNNING", "RETRYING")
#: States a retry applies to (tf_retry refuses the others with TF409).
RETRYABLE_STATES = ("FAILED", "CANCELLED")


@dataclass(frozen=True)
class TaskFilter:
    """Conditions on ``tf_tasks`` (all optional; ``None`` = no condition). Time ranges are
    half-open ``[after, before)`` and need aware datetimes; ``states`` is a set of task states
    (an empty tuple matches no task)."""

    states: tuple[str, ...] | None = None
    queue: str | None = None
    task_type: str | None = None
    task_id: int | None = None
    created_after: dt.datetime | None = None
    created_before: dt.datetime | None = None
    finished_after: dt.datetime | None = None
    finished_before: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.states is not None:
            states = tuple(dict.fromkeys(s.upper() for s in self.states))
            unknown = [s for s in states if s not in TASK_STATES]
            if unknown:
                raise client.InvalidArgument("state", f"must be among {', '.join(TASK_STATES)}, got {unknown[0]!r}")
            object.__setattr__(self, "states", states)
        for name in ("queue", "task_type"):
            value = getattr(self, name)
            if value is not None and client.text_problem(value):
                raise client.InvalidArgument(name, client.text_problem(value) or "")
        if self.task_id is not None and not client.INT8_RANGE[0] <= self.task_id <= client.INT8_RANGE[1]:
            raise client.InvalidArgument("task_id", "outside the range of SQL bigint")
        for name in ("created_after", "created_before", "finished_after", "finished_before"):
            value = getattr(self, name)
            if value is not None and value.utcoffset() is None:
                raise client.InvalidArgument(name, "needs a UTC offset (a naive time is ambiguous)")

    def params(self) -> dict[str, Any]:
        return {
            "states": None if self.states is None else list(self.states),
            "queue": self.queue,
            "task_type": self.task_type,
            "task_id": self.task_id,
            "created_after": self.created_after,
            "created_before": self.created_before,
            "finished_after": self.finished_after,
            "finished_before": self.finished_before,
        }

    def restricted_to(self, allowed: Sequence[str]) -> TaskFilter:
        """This filter limited to the ``allowed`` states (an empty intersection matches nothing)."""
        candidates = allowed if self.states is None else self.states
        return replace(self, states=tuple(s for s in candidates if s in allowed))

    @property
    def matches_nothing(self) -> bool:
        return self.states == ()


def _rows(conn: psycopg.Connection[Any], query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params, prepare=False)
        return cur.fetchall()


def list_tasks(
    conn: psycopg.Connection[Any], where: TaskFilter, *, cursor: int | None = None, limit: int = 50
) -> tuple[list[dict[str, Any]], int | None]:
    """One page of tasks, newest first: ``(rows, next_cursor)``. ``cursor`` is the
    ``next_cursor`` of the previous page (rows with a smaller task id follow); ``next_cursor``
    is ``None`` on the last page. ``limit`` is 1..:data:`PAGE_LIMIT`."""
    if not 1 <= limit <= PAGE_LIMIT:
        raise client.InvalidArgument("limit", f"must be between 1 and {PAGE_LIMIT}, got {limit}")
    if where.matches_nothing:
        return [], None
    rows = _rows(conn, sql.CONSOLE_TASKS_PAGE, {**where.params(), "cursor": cursor, "limit": limit + 1})
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1]["task_id"] if more and rows else None)


def count_matching(
    conn: psycopg.Connection[Any], where: TaskFilter, *, cap: int = BULK_LIMIT, skip_cancel_requested: bool = False
) -> int:
    """How many tasks match ``where``, counting no further than ``cap`` (so the answer costs at
    most ``cap`` rows; ``cap`` means "cap or more")."""
    if where.matches_nothing:
        return 0
    params = {**where.params(), "cursor": None, "limit": cap, "skip_cancel_requested": skip_cancel_requested}
    with conn.cursor() as cur:
        cur.execute(sql.CONSOLE_COUNT_MATCHING, params, prepare=False)
        row = cur.fetchone()
    return int(row[0]) if row else 0


def ids_matching(
    conn: psycopg.Connection[Any], where: TaskFilter, *, limit: int, skip_cancel_requested: bool = False
) -> list[int]:
    """Ids of tasks matching ``where``, newest first, at most ``limit``."""
    if where.matches_nothing:
        return []
    params = {**where.params(), "cursor": None, "limit": limit, "skip_cancel_requested": skip_cancel_requested}
    return [int(r["task_id"]) for r in _rows(conn, sql.CONSOLE_TASK_IDS, params)]


@dataclass
class BulkOutcome:
    """What a bulk action did: one entry per task changed or refused.

    ``done``: ``{"task_id", "task_state", ...}`` rows in ascending task id; ``refused``:
    ``{"task_id", "code", "message"}`` (``not_found``, ``conflict``, ``invalid_argument``);
    ``more``: a filter matched more than :data:`BULK_LIMIT` tasks (call again)."""

    done: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    more: bool = False


def _refusal(task_id: int, exc: Refused) -> dict[str, Any]:
    return {"task_id": task_id, "code": refusal_status(exc)[1], "message": exc.message}


def _bulk(
    conn: psycopg.Connection[Any],
    ids: Iterable[int],
    many_sql: str,
    many_params: dict[str, Any],
    one: Any,
    columns: tuple[str, ...],
) -> BulkOutcome:
    """Apply an action to ``ids``: one statement; on a refusal, one savepoint per id instead."""
    wanted = sorted(set(ids))
    outcome = BulkOutcome()
    existing = {int(r["task_id"]) for r in _rows(conn, sql.CONSOLE_EXISTING_TASK_IDS, {"task_ids": wanted})}
    for task_id in wanted:
        if task_id not in existing:
            outcome.refused.append({"task_id": task_id, "code": "not_found", "message": f"task_id: no task {task_id}"})
    present = [t for t in wanted if t in existing]
    if not present:
        return outcome
    try:
        with conn.transaction(), refusals():
            rows = _rows(conn, many_sql, {**many_params, "task_ids": present})
        outcome.done = [{k: r[k] for k in ("task_id", *columns)} for r in rows]
        return outcome
    except Refused:
        pass
    for task_id in present:  # one refused: go one by one, each under its own savepoint
        try:
            with conn.transaction():
                result = one(conn, task_id).as_dict()
            outcome.done.append({k: result[k] for k in ("task_id", *columns)})
        except Refused as exc:
            outcome.refused.append(_refusal(task_id, exc))
    outcome.refused.sort(key=lambda r: r["task_id"])
    return outcome


def bulk_cancel(
    conn: psycopg.Connection[Any],
    *,
    task_ids: Sequence[int] | None = None,
    where: TaskFilter | None = None,
    reason: str | None = None,
) -> BulkOutcome:
    """Cancel the given tasks, or up to :data:`BULK_LIMIT` tasks matching ``where`` that a
    cancel can change (QUEUED, RETRYING, RUNNING without a cancel request yet). Run it inside
    :meth:`Database.act` (one transaction)."""
    if reason is not None and client.text_problem(reason):
        raise client.InvalidArgument("reason", client.text_problem(reason) or "")
    more = False
    if task_ids is None:
        ids = ids_matching(
            conn,
            (where or TaskFilter()).restricted_to(CANCELLABLE_STATES),
            limit=BULK_LIMIT + 1,
            skip_cancel_requested=True,
        )
        more, task_ids = len(ids) > BULK_LIMIT, ids[:BULK_LIMIT]
    outcome = _bulk(
        conn,
        task_ids,
        sql.CONSOLE_CANCEL_MANY,
        {"reason": reason},
        lambda c, t: client.cancel(c, t, reason),
        ("task_state", "cancel_requested"),
    )
    outcome.more = more
    return outcome


def bulk_retry(
    conn: psycopg.Connection[Any],
    *,
    task_ids: Sequence[int] | None = None,
    where: TaskFilter | None = None,
    extra_attempts: int = 1,
) -> BulkOutcome:
    """Retry the given tasks, or up to :data:`BULK_LIMIT` FAILED/CANCELLED tasks matching
    ``where``. Run it inside :meth:`Database.act`."""
    more = False
    if task_ids is None:
        ids = ids_matching(conn, (where or TaskFilter()).restricted_to(RETRYABLE_STATES), limit=BULK_LIMIT + 1)
        more, task_ids = len(ids) > BULK_LIMIT, ids[:BULK_LIMIT]
    outcome = _bulk(
        conn,
        task_ids,
        sql.CONSOLE_RETRY_MANY,
        {"extra_attempts": extra_attempts},
        lambda c, t: client.retry(c, t, extra_attempts),
        ("task_state", "max_attempts"),
    )
    outcome.more = more
    return outcome


#: The window (seconds of database time) of the "finished" counts of :func:`queues`.
FINISHED_WINDOW_SECONDS = 3600
_LIVE_COUNTS = {"queued": "QUEUED", "running": "RUNNING", "retrying": "RETRYING"}


def queues(
    conn: psycopg.Connection[Any], *, finished_window_seconds: float = FINISHED_WINDOW_SECONDS
) -> list[dict[str, Any]]:
    """Every queue with live work, a control row (paused or limited) or a task finished in the
    window, by name. Each row: ``queue``, ``paused``, ``paused_at``, ``max_running`` (``None`` =
    no limit), the live counts ``QUEUED``, ``due`` (QUEUED and due now), ``RUNNING``,
    ``RETRYING``, ``oldest_due_at`` / ``oldest_due_age_seconds`` (database time; ``None`` when
    nothing is due), and ``finished_succeeded`` / ``finished_failed`` / ``finished_cancelled``:
    tasks that reached that state in the last ``finished_window_seconds``.

    Cost follows live work and the window, not the history: ``tf_queues`` reads the partial
    indexes of the live states and the finished counts read ``tasks_finished_idx`` (counting
    every finished task, as ``tf_queue_stats`` does, reads the whole table)."""
    by_queue: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return by_queue.setdefault(
            name,
            {
                "queue": name,
                "paused": False,
                "paused_at": None,
                "max_running": None,
                "QUEUED": 0,
                "due": 0,
                "RUNNING": 0,
                "RETRYING": 0,
                "oldest_due_at": None,
                "oldest_due_age_seconds": None,
                "finished_succeeded": 0,
                "finished_failed": 0,
                "finished_cancelled": 0,
            },
        )

    for row in client.queues(conn):
        e = entry(row.queue)
        for key, value in row.as_dict().items():
            e[_LIVE_COUNTS.get(key, key)] = value
    for finished in client.finished_recently(conn, finished_window_seconds):
        entry(finished.queue)[f"finished_{finished.state.lower()}"] = int(finished.tasks)
    return [by_queue[name] for name in sorted(by_queue)]


def worker_counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Workers per liveness: ``{"alive": n, "stale": n, "stopped": n}`` (database time)."""
    counts = {"alive": 0, "stale": 0, "stopped": 0}
    for liveness, n in conn.execute(sql.CONSOLE_WORKER_COUNTS).fetchall():
        counts[str(liveness)] = int(n)
    return counts


# --- dependencies and flow control -------------------------------------------------------------
#: Most parents or children listed on a task page (a task has at most 1000 parents, any number
#: of children); and most tasks of the flow graph around a task.
DEPENDENCY_LIST_LIMIT = 200
FLOW_GRAPH_LIMIT = 200
#: Most rate limits / concurrency keys listed on the flow-control page (by key).
FLOW_LIST_LIMIT = 500


@dataclass
class Dependencies:
    """A task's parents (``task_id``, ``task_type``, ``state``, ``finished_at``) and children
    (``task_id``, ``task_type``, ``state``, ``parents_pending``), each by task id, at most
    :data:`DEPENDENCY_LIST_LIMIT`; ``more_parents`` / ``more_children`` say there are more."""

    parents: list[dict[str, Any]] = field(default_factory=list)
    children: list[dict[str, Any]] = field(default_factory=list)
    more_parents: bool = False
    more_children: bool = False


def task_dependencies(
    conn: psycopg.Connection[Any], task_id: int, *, limit: int = DEPENDENCY_LIST_LIMIT
) -> Dependencies:
    """The parents and children of one task from ``tf_task_dependencies`` (states as of this
    read). An unknown task has neither."""

    def side(query: str) -> tuple[list[dict[str, Any]], bool]:
        rows = sorted(_rows(conn, query, {"task_id": task_id, "limit": limit + 1}), key=lambda r: r["task_id"])
        return rows[:limit], len(rows) > limit

    parents, more_parents = side(sql.CONSOLE_FLOW_PARENTS)
    children, more_children = side(sql.CONSOLE_FLOW_CHILDREN)
    return Dependencies(parents, children, more_parents, more_children)


@dataclass
class FlowComponent:
    """The tasks connected to one task through dependency edges (its ancestors, descendants, and
    their other parents and children: the connected component of the graph), at most
    :data:`FLOW_GRAPH_LIMIT` of them, the nearest first.

    ``tasks``: task id -> ``(task_type, state)``; ``edges``: ``(parent_task_id, child_task_id)``
    pairs among ``tasks``, sorted; ``cut``: the component has more tasks than were read, so the
    graph shows part of it."""

    task_id: int
    tasks: dict[int, tuple[str, str]] = field(default_factory=dict)
    edges: list[tuple[int, int]] = field(default_factory=list)
    cut: bool = False


def flow_component(conn: psycopg.Connection[Any], task_id: int, *, limit: int = FLOW_GRAPH_LIMIT) -> FlowComponent:
    """The :class:`FlowComponent` around ``task_id``: the connected tasks found breadth first
    from it, at most ``limit`` (so the ones nearest to it when there are more), then the edges
    among them with both ends' type and state. Two statements. A task with no dependency edge
    (or an unknown id) gives an empty component."""
    component = FlowComponent(task_id)
    found = [
        int(r["task_id"])
        for r in _rows(conn, sql.CONSOLE_FLOW_COMPONENT_TASKS, {"task_id": task_id, "limit": limit + 1})
    ]
    component.cut = len(found) > limit
    if len(found) < 2:
        return component
    ids = found[:limit]
    edges: set[tuple[int, int]] = set()
    for r in _rows(conn, sql.CONSOLE_FLOW_EDGES_AMONG, {"ids": ids}):
        edges.add((int(r["parent_task_id"]), int(r["child_task_id"])))
        component.tasks.setdefault(int(r["parent_task_id"]), (r["parent_task_type"], r["parent_state"]))
        component.tasks.setdefault(int(r["child_task_id"]), (r["child_task_type"], r["child_state"]))
    component.edges = sorted(edges)
    return component


def rate_limits(conn: psycopg.Connection[Any], *, limit: int = FLOW_LIST_LIMIT) -> tuple[list[dict[str, Any]], bool]:
    """``(rows, more)``: rows of ``tf_rate_limits`` by rate key, at most ``limit``: ``rate_key``,
    ``per_second`` (tokens per second), ``burst``, ``tokens_now`` (tokens available now, from
    database time), ``queued`` (QUEUED tasks of the key), ``refilled_at``, ``created_at``,
    ``updated_at``; ``more`` when there are more keys."""
    rows = _rows(conn, sql.CONSOLE_FLOW_RATE_LIMITS, {"limit": limit + 1})
    return rows[:limit], len(rows) > limit


def concurrency_keys(
    conn: psycopg.Connection[Any], *, limit: int = FLOW_LIST_LIMIT
) -> tuple[list[dict[str, Any]], bool]:
    """``(rows, more)``: rows of ``tf_concurrency_keys`` by key, at most ``limit``:
    ``concurrency_key``, ``max_running`` (``None`` = no limit), ``running`` and ``queued``
    (tasks of the key), ``last_claimed_at``, ``created_at``, ``updated_at``."""
    rows = _rows(conn, sql.CONSOLE_FLOW_CONCURRENCY_KEYS, {"limit": limit + 1})
    return rows[:limit], len(rows) > limit


def set_rate_limit(
    conn: psycopg.Connection[Any], rate_key: str, per_second: float | None, burst: int | None = None
) -> tuple[float | None, int | None]:
    """:func:`taskforge.client.set_rate_limit`: set (``per_second`` > 0 tokens per second,
    ``burst`` tokens or ``None`` for the database's default) or remove (``per_second`` ``None``)
    a rate key's limit; returns the limit before. Refusals: :class:`taskforge.errors.Refused`
    TF400 naming ``rate_key``, ``per_second`` or ``burst``. Run it inside :meth:`Database.act`."""
    return client.set_rate_limit(conn, rate_key, per_second, burst)


def set_concurrency_limit(conn: psycopg.Connection[Any], concurrency_key: str, max_running: int | None) -> int | None:
    """:func:`taskforge.client.set_concurrency_limit`: set (1..1000000) or remove (``None``) a
    concurrency key's limit; returns the limit before. Refusals as :func:`set_rate_limit`
    (``concurrency_key``, ``max_running``). Run it inside :meth:`Database.act`."""
    return client.set_concurrency_limit(conn, concurrency_key, max_running)
