"""One task (``/tasks/<id>``): payload, result or error with its traceback, the attempt timeline,
its parents and children with their states, the graph of its flow, its flow-control keys, and
the cancel and retry buttons (``POST /tasks/<id>/cancel``, ``POST /tasks/<id>/retry``).

The timeline is drawn as an SVG (attributes only, no inline style: the CSP allows that) from
database timestamps: for each attempt the wait before it, its run from start to finish (to its
lease deadline while it runs), and for an abandoned attempt the recovery lag between the lease
expiry and its recovery.

The flow graph is the connected component of the dependency graph around the task (at most
:data:`taskforge_console.queries.FLOW_GRAPH_LIMIT` tasks; the page says when it is cut), laid
out by :mod:`taskforge_console.flowgraph` and drawn as an inline SVG by
``pages/_flow_graph.html``. Dependencies are read separately from the task: when that read is
cut short, the page still shows the task (and the banner says what is missing).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from flask import abort, url_for
from werkzeug.wrappers import Response as BaseResponse

from taskforge import client
from taskforge.rows import Task

from .. import queries
from ..auth import may_act
from ..flowgraph import FlowGraph, layout
from .blueprint import bp
from .common import act, action_answer, attempt, read, read_or, render_page

__all__ = ["TIMELINE_WIDTH", "flow", "task", "task_action", "timeline"]

#: Width of the timeline's drawing area in SVG units (the SVG scales to the page).
TIMELINE_WIDTH = 1000.0
ACTIONS = ("cancel", "retry")


def _load(task_id: int) -> Task:
    try:
        return read("task", lambda conn: client.get_task(conn, task_id))
    except client.TaskNotFound:
        abort(404, description=f"task_id: no task {task_id}")
    except client.InvalidArgument as exc:
        abort(400, description=str(exc))


def timeline(task: Task) -> dict[str, Any]:
    """Bars for the SVG timeline: one row per attempt with ``wait`` (from the task's creation or
    the previous attempt's end to this start), ``run`` (start to finish, or to the lease deadline
    while running: ``open`` is then True) and ``lag`` (lease expiry to recovery, ABANDONED only),
    each as ``(x, width)`` in 0..:data:`TIMELINE_WIDTH`; plus ``start``/``end`` of the scale."""
    attempts = task.attempts
    start: dt.datetime = task.created_at
    instants = [start]
    for a in attempts:
        instants += [t for t in (a.started_at, a.finished_at) if t is not None]
        if a.finished_at is None or a.state == "ABANDONED":
            instants.append(a.lease_expires_at)  # the deadline matters only while running or once missed
    if task.finished_at is not None:
        instants.append(task.finished_at)
    end = max(instants)
    span = max((end - start).total_seconds(), 1e-3)

    def x(t: dt.datetime) -> float:
        return round((t - start).total_seconds() / span * TIMELINE_WIDTH, 2)

    def bar(a: dt.datetime, b: dt.datetime) -> tuple[float, float]:
        left = x(a)
        return left, max(round(x(b) - left, 2), 1.5)

    rows = []
    previous_end = start
    for a in attempts:
        running = a.finished_at is None
        run_end = a.lease_expires_at if a.finished_at is None else a.finished_at
        abandoned = a.state == "ABANDONED"
        rows.append(
            {
                "attempt": a,
                "wait": bar(previous_end, a.started_at) if a.started_at > previous_end else None,
                "run": bar(a.started_at, a.lease_expires_at if abandoned else run_end),
                "lag": bar(a.lease_expires_at, a.finished_at) if abandoned and a.finished_at else None,
                "open": running,
            }
        )
        previous_end = run_end
    return {"rows": rows, "start": start, "end": end, "span_seconds": span, "width": TIMELINE_WIDTH}


def flow(task: Task) -> dict[str, Any] | None:
    """The task's dependencies for the page: ``{"dependencies": Dependencies, "graph":
    FlowGraph | None}``, or ``None`` when the read was cut short. A task without parents or
    children costs two index lookups in ``tf_task_dependencies`` and has no graph."""

    def fn(conn: psycopg.Connection[Any]) -> dict[str, Any]:
        deps = queries.task_dependencies(conn, task.task_id)
        graph: FlowGraph | None = None
        if deps.parents or deps.children:
            graph = layout(queries.flow_component(conn, task.task_id))
        return {"dependencies": deps, "graph": graph}

    return read_or("task dependencies", fn, None)


def _region(row: Task, message: str | None = None, category: str = "ok") -> dict[str, Any]:
    return {"task": row, "timeline": timeline(row), "flow": flow(row), "message": message, "category": category}


@bp.get("/tasks/<int:task_id>")
def task(task_id: int) -> str:
    """The task, its attempts, dependencies and flow graph, and (unless read-only) its actions."""
    return render_page("pages/task.html", "pages/_task_region.html", **_region(_load(task_id)))


@bp.post("/tasks/<int:task_id>/<action>")
@may_act
def task_action(task_id: int, action: str) -> BaseResponse | str:
    """Cancel or retry one task (``tf_cancel`` / ``tf_retry``); htmx gets the task region back,
    a plain form post a redirect to the task page with a message."""
    if action not in ACTIONS:
        abort(404)

    def run(conn: Any) -> Any:
        return client.cancel(conn, task_id) if action == "cancel" else client.retry(conn, task_id)

    def describe(result: Any) -> str:
        if action == "retry":
            return f"Task {task_id} is {result.task_state} again (attempt budget {result.max_attempts})."
        if result.task_state == "RUNNING":
            return f"Task {task_id}: a cancel was requested; the worker is told at its next lease renewal."
        return f"Task {task_id} is {result.task_state}."

    outcome = attempt(lambda: act(run), describe)
    return action_answer(
        outcome,
        "pages/_task_region.html",
        lambda message, category: _region(_load(task_id), message, category),
        url_for("pages.task", task_id=task_id),
    )
