"""oban (PyPI ``oban``), the Python port of Elixir's Oban. Needs Python >= 3.12.

Version 0.7.0. App: ``bench/peer/oban_app.py`` (one no-op worker class; ``Oban(pool=...,
queues={"bench": N})``, what ``oban start --queues bench:N`` runs). The interpreter is the first
Python >= 3.12 found (``$TASKFORGE_BENCH_PEER_PYTHON``, this one, python3.N on PATH, pyenv's
versions); without one the peer is skipped. Single slot: queue limit 1. Batched: queue limit B
(TaskForge's claim size): oban's concurrency knob is the queue limit (docs/defining_queues.md:
a queue runs "as many jobs as possible concurrently, up to the configured limit"), its producer
fetches the free slots' worth of jobs in one statement (queries/fetch_jobs.sql, ``LIMIT
demand``) and acknowledges finished jobs in batches; its docs name no other throughput setting.

Window: oban keeps completed jobs (pruned after a day) with ``attempted_at`` (set by the fetch)
and ``completed_at`` (set by the ack), both the database's ``now()`` in UTC: earliest
``attempted_at`` to latest ``completed_at`` of the measured jobs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import psycopg

from ... import sql
from .base import PEER_QUEUE, Batch, Drain, Mode, Outcome, jobs_check
from .runtimes import PythonPeer

__all__ = ["Oban"]

# Unfinished jobs of the queue (the warm-up's are all completed before the measured ones go in).
REMAINING = """
SELECT count(*), clock_timestamp() FROM oban_jobs
 WHERE queue = %(queue)s AND state IN ('available', 'scheduled', 'executing', 'retryable')
"""
MEASURED = """
SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE attempt = 1),
       min(attempted_at) AT TIME ZONE 'UTC', max(completed_at) AT TIME ZONE 'UTC'
  FROM oban_jobs WHERE id BETWEEN %(lo)s AND %(hi)s
"""


class Oban(PythonPeer):
    name: ClassVar[str] = "oban"
    pins: ClassVar[dict[str, str]] = {"oban": "0.7.0"}
    app: ClassVar[str] = "oban_app.py"
    min_python: ClassVar[tuple[int, int]] = (3, 12)
    timing: ClassVar[str] = "earliest attempted_at to latest completed_at of oban_jobs (database now(), UTC)"
    single_source: ClassVar[str] = "a queue limit of 1, docs/defining_queues.md"

    def single_settings(self) -> dict[str, Any]:
        return {"limit": 1}

    def batched_mode(self, batch_size: int) -> Mode:
        return Mode("batched", 1, batch_size, {"limit": batch_size}, "queue limit, docs/defining_queues.md")

    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        left, at = sql.one_row(conn, REMAINING, {"queue": PEER_QUEUE})
        return int(left), at

    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        lo, hi = batch.id_range
        completed, first_try, first, last = sql.one_row(conn, MEASURED, {"lo": lo, "hi": hi})
        jobs = len(batch.ids)
        return Outcome(
            first,
            last,
            [
                jobs_check("counts", int(completed), jobs, "completed"),
                jobs_check("attempts", int(first_try), jobs, "completed at their first attempt"),
            ],
        )
