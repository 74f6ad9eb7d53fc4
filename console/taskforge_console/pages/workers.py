"""The workers page (``/workers``): every worker process start with its liveness (alive, or
stale after three missed heartbeats, from database time), its current tasks, when it started and
when it last beat. Stopped (deregistered) workers are listed with ``?stopped=1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from flask import request

from taskforge import client
from taskforge.rows import RunningTask

from .blueprint import bp
from .common import read_or, render_page

__all__ = ["RUNNING_LIMIT", "workers"]

#: Most RUNNING tasks listed under their workers (the page says when there are more).
RUNNING_LIMIT = 1000


def _load(include_stopped: bool) -> Callable[[psycopg.Connection[Any]], dict[str, Any]]:
    def fn(conn: psycopg.Connection[Any]) -> dict[str, Any]:
        rows = [w.as_dict() for w in client.workers(conn, include_stopped=include_stopped)]
        running = client.running_tasks(conn, limit=RUNNING_LIMIT + 1)
        by_worker: dict[Any, list[RunningTask]] = {}
        for task in running[:RUNNING_LIMIT]:
            by_worker.setdefault(task.owner_worker_id, []).append(task)
        for row in rows:
            row["current_tasks"] = by_worker.get(row["worker_id"], [])
        return {"workers": rows, "running_truncated": len(running) > RUNNING_LIMIT}

    return fn


@bp.get("/workers")
def workers() -> str:
    """Workers, newest start first, with their current tasks."""
    include_stopped = request.args.get("stopped") == "1"
    empty: dict[str, Any] = {"workers": [], "running_truncated": False}
    data = read_or("workers", _load(include_stopped), empty)
    counts: dict[str, int] = {}
    for row in data["workers"]:
        counts[row["liveness"]] = counts.get(row["liveness"], 0) + 1
    return render_page(
        "pages/workers.html",
        "pages/_workers_region.html",
        include_stopped=include_stopped,
        counts=counts,
        running_limit=RUNNING_LIMIT,
        **data,
    )
