"""``GET /metrics``: Prometheus text format, read from the views at scrape time.

A custom collector (prometheus_client) runs a few queries per scrape, each under the console's
read ``statement_timeout``; nothing is counted in the console process, so several consoles (or
a restart) report the same figures. Families:

- ``taskforge_tasks{queue,state}``: live tasks (QUEUED, RUNNING, RETRYING) per queue (tf_queues).
- ``taskforge_tasks_due{queue}``: QUEUED tasks that are due now.
- ``taskforge_tasks_finished{queue,state}``: tasks that reached SUCCEEDED, FAILED or CANCELLED in
  the last :data:`WINDOW_SECONDS` (not the totals since the beginning: those mean counting the
  whole history, about 0.5 s per scrape at a million tasks).
- ``taskforge_queue_oldest_due_age_seconds{queue}``: age of the oldest due QUEUED task.
- ``taskforge_queue_paused{queue}``: 1 while a queue is paused; ``taskforge_queue_max_running``
  the limit of a limited queue.
- ``taskforge_workers{liveness}``: workers alive, stale, stopped (database time).
- ``taskforge_attempts_finished{queue,outcome}``: attempts that finished in the last
  :data:`WINDOW_SECONDS` (a gauge over a sliding window: a total since the beginning would mean
  counting the whole attempt history on every scrape).
- ``taskforge_attempt_recovery_lag_seconds{queue}``: gauge histogram of the recovery lag
  (abandoned_at - lease_expires_at) of attempts abandoned in the last :data:`WINDOW_SECONDS`.
- ``taskforge_table_live_tuples{table}``, ``taskforge_table_dead_tuples{table}``: the server's
  estimates for each table of schema taskforge (dead tuples are row versions vacuum has not
  removed yet: they grow while a snapshot is held or autovacuum falls behind);
  ``taskforge_table_size_bytes{table}`` and ``taskforge_table_index_size_bytes{table}``;
  ``taskforge_table_seconds_since_vacuum{table}`` (manual or automatic; absent before the first).
- ``taskforge_oldest_xmin_age_transactions``: age, in transactions, of the oldest snapshot holding
  vacuum back in this database (tf_snapshot_holders: sessions, prepared transactions,
  replication slots; 0 when none); ``taskforge_oldest_snapshot_held_seconds``: how long the
  oldest such transaction has been open (another role's session counts only when the console's
  role holds ``pg_read_all_stats``: PostgreSQL hides its transaction start otherwise). These
  come from the primary even with a read replica.
- ``taskforge_console_scrape_cut_short``: 1 when a query of this scrape hit the limit, or the
  read replica cancelled it on a conflict with recovery (its families are then missing).

With a read replica (``Settings.read_dsn``), the scrape reads from it, and three more families:

- ``taskforge_read_replica_up``: 1 when the replica answered, 0 when it cannot be reached (the
  scrape's reads then went to the primary).
- ``taskforge_read_replica_lag_seconds`` / ``taskforge_read_replica_lag_bytes``: its replay lag
  (seconds of its clock: 0 while it streams and has replayed all it received, else the age of
  the last transaction it replayed) and the WAL received but not yet replayed; absent when down.
- ``taskforge_console_reads_fell_back``: 1 when a read of this scrape went to the primary
  because the replica could not be reached.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

import psycopg
from flask import Blueprint, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from taskforge import sql

from .. import queries
from ..auth import require_signed_in
from ..db import CutShort, Database, read_fell_back
from .common import database_error

__all__ = ["BUCKETS", "WINDOW_SECONDS", "TaskforgeCollector", "bp"]

#: The sliding window of the attempt families, in seconds.
WINDOW_SECONDS = 900
#: Upper bounds (seconds) of the recovery-lag histogram buckets.
BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

bp = Blueprint("metrics", __name__)
bp.register_error_handler(psycopg.Error, database_error)


class TaskforgeCollector(Collector):
    """Reads the views once per ``collect()`` (one scrape)."""

    def __init__(self, db: Database):
        self.db = db

    def collect(self) -> Iterator[Metric]:
        cut_short = 0
        if self.db.has_replica:
            try:
                yield from self._replica()
            except CutShort:
                cut_short = 1
        try:
            yield from self._queues()
        except CutShort:
            cut_short = 1
        try:
            yield from self._workers()
        except CutShort:
            cut_short = 1
        try:
            yield from self._attempts()
        except CutShort:
            cut_short = 1
        try:
            yield from self._tables()
        except CutShort:
            cut_short = 1
        flag = GaugeMetricFamily(
            "taskforge_console_scrape_cut_short", "1 when a query of this scrape hit the console's statement_timeout"
        )
        flag.add_metric([], cut_short)
        yield flag
        if self.db.has_replica:
            fell_back = GaugeMetricFamily(
                "taskforge_console_reads_fell_back",
                "1 when a read of this scrape went to the primary because the read replica could not be reached",
            )
            fell_back.add_metric([], 1 if read_fell_back() else 0)
            yield fell_back

    def _replica(self) -> Iterator[Metric]:
        status = self.db.replica_status()
        assert status is not None
        up = GaugeMetricFamily(
            "taskforge_read_replica_up", "1 when the console's read replica answered, 0 when reads go to the primary"
        )
        up.add_metric([], 1 if status.up else 0)
        yield up
        if status.lag_seconds is not None:
            lag = GaugeMetricFamily(
                "taskforge_read_replica_lag_seconds",
                "Replay lag of the read replica (0 while it streams and has replayed all it received)",
            )
            lag.add_metric([], status.lag_seconds)
            yield lag
        if status.lag_bytes is not None:
            lag_bytes = GaugeMetricFamily(
                "taskforge_read_replica_lag_bytes", "WAL the read replica received but has not replayed yet"
            )
            lag_bytes.add_metric([], status.lag_bytes)
            yield lag_bytes

    def _queues(self) -> Iterator[Metric]:
        rows = self.db.read(
            "metrics: queues", lambda conn: queries.queues(conn, finished_window_seconds=WINDOW_SECONDS)
        )
        tasks = GaugeMetricFamily("taskforge_tasks", "Live tasks per queue and state", labels=["queue", "state"])
        due = GaugeMetricFamily("taskforge_tasks_due", "QUEUED tasks that are due now, per queue", labels=["queue"])
        finished = GaugeMetricFamily(
            "taskforge_tasks_finished",
            f"Tasks that reached a terminal state in the last {WINDOW_SECONDS} s, per queue and state",
            labels=["queue", "state"],
        )
        oldest = GaugeMetricFamily(
            "taskforge_queue_oldest_due_age_seconds",
            "Age of the oldest QUEUED task that is due, per queue (database time)",
            labels=["queue"],
        )
        paused = GaugeMetricFamily("taskforge_queue_paused", "1 while the queue is paused", labels=["queue"])
        limit = GaugeMetricFamily(
            "taskforge_queue_max_running", "Most RUNNING tasks of a limited queue", labels=["queue"]
        )
        for row in rows:
            name = row["queue"]
            for state in ("QUEUED", "RUNNING", "RETRYING"):
                tasks.add_metric([name, state], row[state])
            due.add_metric([name], row["due"])
            for state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                finished.add_metric([name, state], row[f"finished_{state.lower()}"])
            if row["oldest_due_age_seconds"] is not None:
                oldest.add_metric([name], max(0.0, float(row["oldest_due_age_seconds"])))
            paused.add_metric([name], 1 if row["paused"] else 0)
            if row["max_running"] is not None:
                limit.add_metric([name], row["max_running"])
        yield from (tasks, due, finished, oldest, paused, limit)

    def _workers(self) -> Iterator[Metric]:
        counts = self.db.read("metrics: workers", queries.worker_counts)
        workers = GaugeMetricFamily("taskforge_workers", "Worker processes per liveness", labels=["liveness"])
        for liveness, n in sorted(counts.items()):
            workers.add_metric([liveness], n)
        yield workers

    def _attempts(self) -> Iterator[Metric]:
        params = {"window_seconds": WINDOW_SECONDS}

        def read(conn: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
            finished = conn.execute(sql.CONSOLE_METRICS_ATTEMPTS, params, prepare=False).fetchall()
            lags = conn.execute(sql.CONSOLE_METRICS_RECOVERY_LAG, params, prepare=False).fetchall()
            return finished, lags

        finished, lags = self.db.read("metrics: attempts", read)
        family = GaugeMetricFamily(
            "taskforge_attempts_finished",
            f"Attempts finished in the last {WINDOW_SECONDS} s per queue and outcome",
            labels=["queue", "outcome"],
        )
        for queue, outcome, n in sorted(finished):
            family.add_metric([queue, outcome], n)
        yield family
        yield from self._lag_histogram(lags)

    def _tables(self) -> Iterator[Metric]:
        def read(conn: Any) -> tuple[list[tuple[Any, ...]], tuple[Any, ...] | None]:
            tables = conn.execute(sql.CONSOLE_METRICS_TABLES, prepare=False).fetchall()
            oldest = conn.execute(sql.CONSOLE_METRICS_OLDEST_SNAPSHOT, prepare=False).fetchone()
            return tables, oldest

        # Vacuum's statistics and the snapshots that hold it back are the primary's own (a
        # standby counts no dead tuples of its own): read there even with a read replica.
        tables, oldest = self.db.read_primary("metrics: tables", read)
        families = {
            "live": GaugeMetricFamily("taskforge_table_live_tuples", "Live rows (estimate)", labels=["table"]),
            "dead": GaugeMetricFamily(
                "taskforge_table_dead_tuples", "Dead row versions vacuum has not removed yet", labels=["table"]
            ),
            "size": GaugeMetricFamily("taskforge_table_size_bytes", "Table size without indexes", labels=["table"]),
            "index": GaugeMetricFamily("taskforge_table_index_size_bytes", "Size of the indexes", labels=["table"]),
            "vacuum": GaugeMetricFamily(
                "taskforge_table_seconds_since_vacuum",
                "Seconds since the last vacuum (manual or auto)",
                labels=["table"],
            ),
        }
        for name, live, dead, size, index, since_vacuum in tables:
            families["live"].add_metric([name], live)
            families["dead"].add_metric([name], dead)
            families["size"].add_metric([name], size)
            families["index"].add_metric([name], index)
            if since_vacuum is not None:
                families["vacuum"].add_metric([name], max(0.0, since_vacuum))
        yield from families.values()
        xmin_age, held = oldest or (0, 0.0)
        age = GaugeMetricFamily(
            "taskforge_oldest_xmin_age_transactions",
            "Age in transactions of the oldest snapshot holding vacuum back in this database (0: none)",
        )
        age.add_metric([], xmin_age)
        seconds = GaugeMetricFamily(
            "taskforge_oldest_snapshot_held_seconds", "How long the oldest snapshot holder's transaction has been open"
        )
        seconds.add_metric([], held)
        yield from (age, seconds)

    @staticmethod
    def _lag_histogram(lags: list[tuple[Any, ...]]) -> Iterator[Metric]:
        per_queue: dict[str, list[float]] = {}
        for queue, lag in lags:
            per_queue.setdefault(queue, []).append(max(0.0, float(lag or 0.0)))
        family = GaugeHistogramMetricFamily(
            "taskforge_attempt_recovery_lag_seconds",
            f"Recovery lag (abandoned_at - lease_expires_at) of attempts abandoned in the last {WINDOW_SECONDS} s",
            labels=["queue"],
        )
        for queue in sorted(per_queue):
            values = sorted(per_queue[queue])
            buckets = [(str(b), bisect.bisect_right(values, b)) for b in BUCKETS]
            buckets.append(("+Inf", len(values)))
            family.add_metric([queue], buckets, gsum_value=sum(values))
        yield family


@bp.get("/metrics")
def metrics() -> Any:
    """Prometheus text format (needs the token when one is configured)."""
    refusal = require_signed_in()
    if refusal is not None:
        return refusal
    from ..state import console

    registry = CollectorRegistry(auto_describe=False)
    registry.register(TaskforgeCollector(console().db))
    return Response(generate_latest(registry), mimetype=None, content_type=CONTENT_TYPE)
