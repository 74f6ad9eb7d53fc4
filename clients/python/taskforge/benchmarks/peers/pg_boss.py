"""pg-boss (npm), a Node.js queue on PostgreSQL's SKIP LOCKED with partitioned job tables.

Version 10.4.2: the newest release line whose ``engines`` accept Node.js 20 (11 needs >= 22).
App: ``bench/peer/pg_boss_app.js``: a loop of ``fetch({batchSize})``, the no-op handler and one
``complete(name, ids)`` per fetch (why not ``work()``: the app's header). Single slot:
``batchSize 1``, fetch()'s default (docs/api/jobs.md). Batched: ``batchSize 100``; pg-boss's docs
name no throughput setting, and batchSize, of fetch() and work() (docs/api/jobs.md,
docs/api/workers.md), is their one batching knob.

Window: pg-boss keeps completed jobs (archived only after hours) with ``started_on`` (set by the
fetch) and ``completed_on`` (set by complete), both the database's ``now()``: earliest
``started_on`` to latest ``completed_on`` of the measured jobs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import psycopg

from ... import sql
from .base import PEER_QUEUE, Batch, Drain, Mode, Outcome, jobs_check
from .runtimes import NodePeer

__all__ = ["PgBoss"]

# Unfinished jobs of the queue (the warm-up's are all completed before the measured ones go in).
REMAINING = """
SELECT count(*), clock_timestamp() FROM pgboss.job WHERE name = %(queue)s AND state < 'completed'
"""
MEASURED = """
SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE retry_count = 0),
       min(started_on), max(completed_on)
  FROM pgboss.job WHERE name = %(queue)s AND id = ANY(%(ids)s::uuid[])
"""


class PgBoss(NodePeer):
    name: ClassVar[str] = "pg-boss"
    pins: ClassVar[dict[str, str]] = {"pg-boss": "10.4.2"}
    app: ClassVar[str] = "pg_boss_app.js"
    min_node_major: ClassVar[int] = 20
    timing: ClassVar[str] = "earliest started_on to latest completed_on of pgboss.job (database now())"
    single_source: ClassVar[str] = "fetch()'s default batchSize, docs/api/jobs.md"

    def single_settings(self) -> dict[str, Any]:
        return {"batchSize": 1}

    def batched_mode(self, batch_size: int) -> Mode:
        return Mode("batched", 1, 100, {"batchSize": 100}, "batchSize of fetch()/work(), docs/api/jobs.md")

    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        left, at = sql.one_row(conn, REMAINING, {"queue": PEER_QUEUE})
        return int(left), at

    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        completed, first_try, first, last = sql.one_row(conn, MEASURED, {"queue": PEER_QUEUE, "ids": list(batch.ids)})
        jobs = len(batch.ids)
        return Outcome(
            first,
            last,
            [
                jobs_check("counts", int(completed), jobs, "completed"),
                jobs_check("attempts", int(first_try), jobs, "completed at their first attempt (retry_count 0)"),
            ],
        )
