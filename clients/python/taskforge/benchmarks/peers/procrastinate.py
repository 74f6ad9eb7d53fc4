"""procrastinate (PyPI), the Python peer TaskForge was first measured against.

App: ``bench/peer/procrastinate_app.py`` (one no-op coroutine task; the worker is
``App.run_worker_async``, what ``procrastinate worker`` runs). Single slot: ``concurrency 1``,
procrastinate's default ("By default, each worker only takes one job at a time",
docs/howto/production/concurrency.md). Batched: one process with ``concurrency = B`` and a pool of
B + 1 connections (the same page; docs/discussions.md, "Mind the size of your PostgreSQL pool":
short jobs need "as many connections as your concurrency (plus one)").

Window: procrastinate keeps finished jobs and writes an event row per transition with the
database's ``now()``: first ``started`` to last ``succeeded`` event of the measured jobs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import psycopg

from ... import sql
from ...processes import ProcessHarness
from ..results import CheckResult
from .base import PEER_QUEUE, Batch, Drain, Mode, Outcome, jobs_check
from .runtimes import PythonPeer

__all__ = ["Procrastinate"]

WORKERS = "SELECT count(*) FROM procrastinate_workers"
# Unfinished jobs of the queue (the warm-up's are all finished before the measured ones go in).
REMAINING = """
SELECT count(*), clock_timestamp() FROM procrastinate_jobs
 WHERE queue_name = %(queue)s AND status IN ('todo', 'doing')
"""
STATUSES = "SELECT status::text, count(*) FROM procrastinate_jobs WHERE id BETWEEN %(lo)s AND %(hi)s GROUP BY 1"
SPAN = """
SELECT min(at) FILTER (WHERE type = 'started'), max(at) FILTER (WHERE type = 'succeeded'),
       count(*) FILTER (WHERE type = 'started'), count(*) FILTER (WHERE type = 'succeeded')
  FROM procrastinate_events WHERE job_id BETWEEN %(lo)s AND %(hi)s
"""


class Procrastinate(PythonPeer):
    name: ClassVar[str] = "procrastinate"
    pins: ClassVar[dict[str, str]] = {"procrastinate": "3.10.0"}
    app: ClassVar[str] = "procrastinate_app.py"
    timing: ClassVar[str] = "first 'started' to last 'succeeded' row of procrastinate_events (database now())"
    single_source: ClassVar[str] = "procrastinate's default, docs/howto/production/concurrency.md"

    def single_settings(self) -> dict[str, Any]:
        return {"concurrency": 1}

    def batched_mode(self, batch_size: int) -> Mode:
        return Mode(
            "batched",
            1,
            batch_size,
            {"concurrency": batch_size, "pool_max_size": batch_size + 1},
            "docs/howto/production/concurrency.md; pool size: docs/discussions.md (concurrency plus one)",
        )

    def ready(self, conn: psycopg.Connection[Any], harness: ProcessHarness) -> int:
        """Workers registered in ``procrastinate_workers`` (a worker registers once it runs)."""
        return int(sql.one_value(conn, WORKERS))

    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        left, at = sql.one_row(conn, REMAINING, {"queue": PEER_QUEUE})
        return int(left), at

    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        lo, hi = batch.id_range
        statuses = {str(k): int(v) for k, v in conn.execute(STATUSES, {"lo": lo, "hi": hi}).fetchall()}
        first, last, started, succeeded = sql.one_row(conn, SPAN, {"lo": lo, "hi": hi})
        jobs = len(batch.ids)
        return Outcome(
            first,
            last,
            [
                jobs_check("counts", statuses.get("succeeded", 0), jobs, f"succeeded (statuses {statuses})"),
                CheckResult(
                    "events",
                    started == succeeded == jobs,
                    f"{started} 'started' and {succeeded} 'succeeded' events for {jobs} jobs",
                ),
            ],
            {"statuses": statuses},
        )
