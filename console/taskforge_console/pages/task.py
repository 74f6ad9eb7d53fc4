"""One task (``/tasks/<id>``): payload, result or error with its traceback, the attempt timeline,
and the cancel and retry buttons (``POST /tasks/<id>/cancel``, ``POST /tasks/<id>/retry``).

The timeline is drawn as an SVG (attributes only, no inline style: the CSP allows that) from
database timestamps: for each attempt the wait before it, its run from start to finish (to its
lease deadline while it runs), and for an abandoned attempt the recovery lag between the lease
expiry and its recovery.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import abort, flash, redirect, render_template, url_for
from werkzeug.wrappers import Response as BaseResponse

from taskforge import client
from taskforge.rows import Task

from ..auth import may_act
from .blueprint import bp
from .common import act, is_region_request, problem_of, read, render_page

__all__ = ["TIMELINE_WIDTH", "task", "task_action", "timeline"]

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


@bp.get("/tasks/<int:task_id>")
def task(task_id: int) -> str:
    """The task, its attempts and (unless read-only) its actions; refreshes while it is live."""
    row = _load(task_id)
    return render_page("pages/task.html", "pages/_task_region.html", task=row, timeline=timeline(row))


@bp.post("/tasks/<int:task_id>/<action>")
@may_act
def task_action(task_id: int, action: str) -> BaseResponse | str:
    """Cancel or retry one task (``tf_cancel`` / ``tf_retry``); htmx gets the task region back,
    a plain form post a redirect to the task page with a message."""
    if action not in ACTIONS:
        abort(404)

    def run(conn: Any) -> Any:
        return client.cancel(conn, task_id) if action == "cancel" else client.retry(conn, task_id)

    message: str
    category = "ok"
    try:
        result = act(run)
        if action == "cancel":
            message = (
                f"Task {task_id}: a cancel was requested; the worker is told at its next lease renewal."
                if result.task_state == "RUNNING"
                else f"Task {task_id} is {result.task_state}."
            )
        else:
            message = f"Task {task_id} is {result.task_state} again (attempt budget {result.max_attempts})."
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        message, category = problem, "error"
    if is_region_request():
        row = _load(task_id)
        body = render_template(
            "pages/_task_region.html", task=row, timeline=timeline(row), message=message, category=category
        )
        return body  # 200 also for a refusal: htmx swaps only 2xx answers, and the region shows it
    flash(message, category)
    return redirect(url_for("pages.task", task_id=task_id))
