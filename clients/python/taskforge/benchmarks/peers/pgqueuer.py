"""pgqueuer (PyPI), an asyncio Python queue: batched dequeues, LISTEN/NOTIFY, a status log table.

Version 1.6.0, with asyncpg (the driver its docs find fastest) and uvloop (what ``pgq run``
uses when installed). App: ``bench/peer/pgqueuer_app.py``. Single slot: one PgQueuer with
``batch_size 1`` and ``max_concurrent_tasks 2``, the nearest to one slot pgqueuer accepts (it
refuses ``max_concurrent_tasks`` below twice the batch size; without the cap its dequeue loop
keeps taking jobs while earlier ones run). Batched: its documented benchmark setup
(docs/comparisons/benchmarks.md, tools/benchmark.py): five PgQueuer instances (dequeue tasks),
each on its own asyncpg connection, ``batch_size 10``, in one process. Durability stays the
default ``durable`` (logged tables), as TaskForge's are.

Window: pgqueuer deletes a finished job from its queue table but appends every status change to
``pgqueuer_log`` with the database's ``now()``: first ``picked`` to last ``successful`` row of
the measured jobs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import psycopg

from ... import sql
from ..results import CheckResult
from .base import Batch, Drain, Mode, Outcome, jobs_check
from .runtimes import PythonPeer

__all__ = ["Pgqueuer"]

REMAINING = "SELECT count(*), clock_timestamp() FROM pgqueuer WHERE id BETWEEN %(lo)s AND %(hi)s"
LOG = """
SELECT count(*) FILTER (WHERE status = 'picked'), count(*) FILTER (WHERE status = 'successful'),
       count(*) FILTER (WHERE status NOT IN ('queued', 'picked', 'successful')),
       min(created) FILTER (WHERE status = 'picked'), max(created) FILTER (WHERE status = 'successful')
  FROM pgqueuer_log WHERE job_id BETWEEN %(lo)s AND %(hi)s
"""


class Pgqueuer(PythonPeer):
    name: ClassVar[str] = "pgqueuer"
    pins: ClassVar[dict[str, str]] = {"pgqueuer": "1.6.0"}
    extras: ClassVar[tuple[str, ...]] = ("asyncpg>=0.29", "uvloop>=0.19")
    app: ClassVar[str] = "pgqueuer_app.py"
    timing: ClassVar[str] = "first 'picked' to last 'successful' row of pgqueuer_log (database now())"
    single_source: ClassVar[str] = "the smallest max_concurrent_tasks pgqueuer accepts (core/qm.py run())"

    def single_settings(self) -> dict[str, Any]:
        return {"managers": 1, "batch_size": 1, "max_concurrent_tasks": 2}

    def batched_mode(self, batch_size: int) -> Mode:
        return Mode(
            "batched",
            1,
            50,
            {"managers": 5, "batch_size": 10},
            "docs/comparisons/benchmarks.md (tools/benchmark.py: 5 dequeue tasks, batch size 10)",
        )

    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        lo, hi = batch.id_range
        left, at = sql.one_row(conn, REMAINING, {"lo": lo, "hi": hi})
        return int(left), at

    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        lo, hi = batch.id_range
        picked, succeeded, other, first, last = sql.one_row(conn, LOG, {"lo": lo, "hi": hi})
        left, _ = self.remaining(conn, batch)
        jobs = len(batch.ids)
        return Outcome(
            first,
            last,
            [
                jobs_check("counts", int(succeeded), jobs, "logged 'successful'"),
                jobs_check("attempts", int(picked), jobs, "picked exactly once in total"),
                CheckResult(
                    "no_leftovers", left == 0 and other == 0, f"{left} left in pgqueuer, {other} other log rows"
                ),
            ],
        )
