"""graphile-worker (npm), the fastest Node.js PostgreSQL queue we know of.

Version 0.17.3: the last release whose ``engines`` accept Node.js 20 (0.18 needs >= 22.18).
App: ``bench/peer/graphile_worker_app.js`` (one no-op task, ``run()`` with its own SIGTERM
handling so a process exits 0). Every process runs with ``NO_LOG_SUCCESS=1``, as
graphile-worker's own perfTest/run.js does: no log line per completed job (TaskForge's workers
run at ``--log-level WARNING`` likewise). Single slot: ``concurrentJobs 1`` (its default).
Batched: the configuration of website/docs/performance.md ("Quick stats"): ``concurrentJobs 24,
maxPoolSize 25, localQueue {size: 500}, completeJobBatchDelay 0, failJobBatchDelay 0``.

Window. graphile-worker deletes a job when it completes and keeps no history, so no finish
timestamp survives. The harness enqueues the measured jobs itself through graphile-worker's SQL
API (``graphile_worker.add_jobs``, website/docs/sql-add-job.md) in one transaction and, in the
same session right after the commit, reads ``clock_timestamp()``: the window's start (a little
before the first job can be fetched, so the window includes the first pickup, a few ms). The
end is the database clock of the first poll, every :data:`POLL_SECONDS`, that finds none of the
batch's rows left in ``graphile_worker._private_jobs`` (one index probe: the lowest remaining
id of the batch's id range). The true end lies between the previous poll and that one: the
trial records that gap as ``window_end_bound_seconds``; both errors make graphile-worker look
slower, never faster, by at most that bound plus the pickup.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import psycopg

from ... import sql
from .. import stats
from .base import Batch, Drain, Installed, Mode, Outcome, PeerError, jobs_check
from .runtimes import NodePeer

__all__ = ["POLL_SECONDS", "GraphileWorker"]

#: Seconds between the polls that find the end of the window (its error bound).
POLL_SECONDS = 0.005

ADD_JOBS = """
SELECT id FROM graphile_worker.add_jobs(ARRAY(
    SELECT ROW('noop', '{}'::json, NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
      FROM generate_series(1, %(count)s)))
"""
DB_CLOCK = "SELECT clock_timestamp()"
# The batch's jobs still in the table (upper bound: highest id - lowest remaining id + 1; 0 when none).
REMAINING = """
SELECT coalesce(%(hi)s - min(id) + 1, 0), clock_timestamp()
  FROM graphile_worker._private_jobs WHERE id BETWEEN %(lo)s AND %(hi)s
"""
LEFT = """
SELECT count(*), count(*) FILTER (WHERE last_error IS NOT NULL)
  FROM graphile_worker._private_jobs WHERE id BETWEEN %(lo)s AND %(hi)s
"""


class GraphileWorker(NodePeer):
    name: ClassVar[str] = "graphile-worker"
    pins: ClassVar[dict[str, str]] = {"graphile-worker": "0.17.3"}
    app: ClassVar[str] = "graphile_worker_app.js"
    min_node_major: ClassVar[int] = 14
    poll_seconds: ClassVar[float] = POLL_SECONDS
    timing: ClassVar[str] = (
        "start: clock_timestamp() right after the insert commits; end: first poll (every 5 ms) that "
        "finds none of the jobs left (finished jobs are deleted)"
    )
    single_source: ClassVar[str] = "graphile-worker's default concurrency (website/docs/library/run.md)"

    def single_settings(self) -> dict[str, Any]:
        return {"concurrentJobs": 1}

    def batched_mode(self, batch_size: int) -> Mode:
        settings = {
            "concurrentJobs": 24,
            "maxPoolSize": 25,
            "localQueue": {"size": 500},
            "completeJobBatchDelay": 0,
            "failJobBatchDelay": 0,
        }
        return Mode("batched", 1, 24, settings, "website/docs/performance.md, Quick stats")

    def process_env(self, installed: Installed, dsn: str) -> dict[str, str]:
        return {**super().process_env(installed, dsn), "NO_LOG_SUCCESS": "1"}

    def enqueue(self, installed: Installed, dsn: str, count: int) -> Batch:
        """``graphile_worker.add_jobs`` in one transaction, then the database clock right after
        its commit, in the same session."""
        with psycopg.connect(dsn) as conn:
            ids = tuple(int(row[0]) for row in conn.execute(ADD_JOBS, {"count": count}))
            conn.commit()
            committed_at = sql.one_value(conn, DB_CLOCK)
        if len(ids) != count:
            raise PeerError(f"add_jobs returned {len(ids)} ids for {count} jobs")
        return Batch(ids=ids, committed_at=committed_at)

    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        lo, hi = batch.id_range
        left, at = sql.one_row(conn, REMAINING, {"lo": lo, "hi": hi})
        return int(left), at

    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        lo, hi = batch.id_range
        left, failed = sql.one_row(conn, LEFT, {"lo": lo, "hi": hi})
        jobs = len(batch.ids)
        start = batch.committed_at
        if start is None:
            raise PeerError("the batch has no commit time")
        bound = stats.poll_end_bound_seconds(start, drain.last_busy_at, drain.drained_at)
        return Outcome(
            start,
            drain.drained_at,
            [
                jobs_check("counts", jobs - int(left), jobs, "completed (deleted from _private_jobs)"),
                jobs_check("no_errors", jobs - int(failed), jobs, "without a last_error"),
            ],
            {"window_end_bound_seconds": bound, "poll_seconds": POLL_SECONDS},
        )
