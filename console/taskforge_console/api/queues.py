"""``/api/queues``, ``/api/workers``, ``/api/stats``: what the system is doing, and pausing queues."""

from __future__ import annotations

from typing import Any

from taskforge import client

from .. import queries
from ..auth import may_act
from ..state import console
from .common import api_blueprint
from .errors import ErrorBody
from .models import QueueChanged, QueueList, QueuePath, Stats, WorkerList, WorkersQuery

__all__ = ["bp"]

bp = api_blueprint("api_system", __name__, "system", "Queues (pause, resume), workers and statistics.")


@bp.get("/queues", responses={200: QueueList})
def list_queues() -> Any:
    """Every queue with live work, a control or a task finished in the last hour: paused or not,
    its limit, live counts, age of the oldest due task, tasks finished in the last hour."""
    rows = console().db.read("queues", queries.queues)
    return QueueList.model_validate({"queues": rows}).model_dump(mode="json")


def _pause_or_resume(queue: str, pause: bool) -> Any:
    action = client.pause_queue if pause else client.resume_queue
    changed = console().db.act(lambda conn: action(conn, queue))
    return QueueChanged(queue=queue, paused=pause, changed=changed).model_dump(mode="json")


@bp.post("/queues/<queue>/pause", responses={200: QueueChanged, 403: ErrorBody})
@may_act
def pause_queue(path: QueuePath) -> Any:
    """Pause a queue (tf_pause_queue): workers stop claiming its tasks; submits still succeed.
    changed=false when it was already paused."""
    return _pause_or_resume(path.queue, True)


@bp.post("/queues/<queue>/resume", responses={200: QueueChanged, 403: ErrorBody})
@may_act
def resume_queue(path: QueuePath) -> Any:
    """Resume a paused queue (tf_resume_queue). changed=false when it was not paused."""
    return _pause_or_resume(path.queue, False)


@bp.get("/workers", responses={200: WorkerList})
def list_workers(query: WorkersQuery) -> Any:
    """Worker processes, newest start first, with liveness from database time (alive, stale after
    three missed heartbeats, stopped) and how many tasks each is running."""
    rows = console().db.read("workers", lambda conn: client.workers(conn, include_stopped=query.include_stopped))
    return WorkerList.model_validate({"workers": [w.as_dict() for w in rows]}).model_dump(mode="json")


@bp.get("/stats", responses={200: Stats})
def stats() -> Any:
    """What the dashboard shows: the queues (as GET /api/queues), workers per liveness, and per
    minute of the last hour finished attempts and first-attempt queue wait p50/p95."""

    def read(conn: Any) -> dict[str, Any]:
        return {
            "queues": queries.queues(conn),
            "workers": queries.worker_counts(conn),
            "per_minute": [m.as_dict() for m in client.throughput_per_minute(conn)],
        }

    return Stats.model_validate(console().db.read("statistics", read)).model_dump(mode="json")
