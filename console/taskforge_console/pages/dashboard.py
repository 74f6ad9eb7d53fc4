"""The dashboard (``/``) and the per-minute series its charts load (``/dashboard/series.json``).

The page shows, per queue, the live tasks (queued and due, running, retrying, from ``tf_queues``),
the tasks that finished in the last hour by state (``tf_tasks`` along ``tasks_finished_idx``),
the age of the oldest due task, and the live and stale workers. It never counts the whole
history: every read follows live work or the last hour, so the page stays fast with millions of
finished tasks (docs/console.md, "Benchmark").

With a read replica (``--read-dsn``) a card shows whether it answers and its replay lag
(:meth:`taskforge_console.db.Database.replica_status`).

The charts (``static/charts.js``) fetch the series separately, so the page itself answers before
the per-minute aggregation has run: throughput (attempts succeeded and failed per minute) and
the p50/p95 queue wait of first attempts per minute, over the last hour of database time
(``tf_throughput_per_minute``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from flask import Response, jsonify

from taskforge import client, sql

from .. import queries
from ..db import CutShort, ReplicaStatus
from ..state import console
from .blueprint import bp
from .common import read, read_or, render_page

__all__ = ["FINISHED_WINDOW_SECONDS", "SERIES_MINUTES", "dashboard", "dashboard_series", "overview", "series"]

#: The window of the "finished" columns (seconds of database time).
FINISHED_WINDOW_SECONDS = queries.FINISHED_WINDOW_SECONDS
#: Minutes on the charts' x axis (the current one and the 59 before it, as the view holds).
SERIES_MINUTES = 60
#: The columns summed over all queues for the cards.
TOTALS = ("QUEUED", "due", "RUNNING", "RETRYING", "finished_succeeded", "finished_failed", "finished_cancelled")


def overview(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """``{"queues": [...], "totals": {...}, "workers": {...}}``: the rows of
    :func:`taskforge_console.queries.queues` (live counts, oldest due task, pause state, tasks
    finished in the last :data:`FINISHED_WINDOW_SECONDS`), their :data:`TOTALS` over all queues,
    and workers per liveness. Every read follows live work or the window, not the history."""
    rows = queries.queues(conn, finished_window_seconds=FINISHED_WINDOW_SECONDS)
    totals = {key: sum(int(r.get(key) or 0) for r in rows) for key in TOTALS}
    return {"queues": rows, "totals": totals, "workers": queries.worker_counts(conn)}


@bp.get("/")
def dashboard() -> str:
    """Counts per queue, oldest waiting task per queue, workers; charts load their series."""
    empty: dict[str, Any] = {"queues": [], "totals": {}, "workers": {}}
    replica = _replica_status()
    data = read_or("queue counts", overview, empty)
    return render_page(
        "pages/dashboard.html",
        "pages/_dashboard_region.html",
        finished_window_seconds=FINISHED_WINDOW_SECONDS,
        replica=replica,
        **data,
    )


def _replica_status() -> ReplicaStatus | None:
    """The read replica's state and lag for the card, ``None`` without one (a replica that
    cancels this query shows as up with its lag unknown, and the cut-short banner)."""
    db = console().db
    if not db.has_replica:
        return None
    try:
        return db.replica_status()
    except CutShort:
        return ReplicaStatus(up=True)


def series(rows: list[dict[str, Any]], current_minute: dt.datetime) -> dict[str, Any]:
    """The charts' JSON from ``tf_throughput_per_minute`` rows: ``minutes`` (unix seconds of the
    :data:`SERIES_MINUTES` minutes ending with ``current_minute``) and, per queue, aligned lists
    ``succeeded``, ``failed`` (0 where nothing finished), ``wait_p50``, ``wait_p95`` (seconds,
    ``None`` where no first attempt finished)."""
    first = current_minute - dt.timedelta(minutes=SERIES_MINUTES - 1)
    minutes = [first + dt.timedelta(minutes=i) for i in range(SERIES_MINUTES)]
    index = {m: i for i, m in enumerate(minutes)}
    queues: dict[str, dict[str, list[Any]]] = {}
    for row in rows:
        i = index.get(row["minute"])
        if i is None:
            continue
        q = queues.setdefault(
            row["queue"],
            {
                "succeeded": [0] * SERIES_MINUTES,
                "failed": [0] * SERIES_MINUTES,
                "wait_p50": [None] * SERIES_MINUTES,
                "wait_p95": [None] * SERIES_MINUTES,
            },
        )
        q["succeeded"][i] = int(row["attempts_succeeded"])
        q["failed"][i] = int(row["attempts_failed"])
        q["wait_p50"][i] = row["wait_p50_seconds"]
        q["wait_p95"][i] = row["wait_p95_seconds"]
    return {
        "minutes": [int(m.timestamp()) for m in minutes],
        "queues": {name: queues[name] for name in sorted(queues)},
        "note": "per minute of database time (UTC), last hour",
    }


def _series(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    current = sql.one_value(conn, sql.DB_CURRENT_MINUTE)
    return series([m.as_dict() for m in client.throughput_per_minute(conn)], current)


@bp.get("/dashboard/series.json")
def dashboard_series() -> Response:
    """JSON for ``static/charts.js`` (see :func:`series`)."""
    return jsonify(read("throughput per minute", _series))
