"""The scheduler process: ``tf_recover``, ``tf_promote`` and ``tf_enqueue_periodic`` in a loop
(and ``tf_prune`` with ``tf_prune_workers``).

Each pass makes the partitioned history's ranges ahead (``tf_make_partitions``: nothing on the
default layout), recovers RUNNING tasks whose lease has expired (attempt ABANDONED, task requeued or
ended), promotes RETRYING tasks whose backoff is over, and enqueues the due tick of each
periodic schedule (one task per tick; the rules, catch-up and DST included, are the database's:
docs/sql-api.md#tf_enqueue_periodic). It then sleeps until the earliest of the next lease
deadline, the next backoff end, the next periodic tick and ``max_interval_seconds``, plus 2 ms,
so a lease is recovered (or a tick enqueued) a few milliseconds after it is due. The time left
is computed by the database (``extract(epoch FROM next_lease_expiry - clock_timestamp())``):
the scheduler never compares its own clock with a database timestamp; it waits on the
monotonic clock.

Several schedulers may run side by side: the functions lock rows with ``FOR UPDATE SKIP
LOCKED`` and re-check them under the lock, so each task is handled once and each periodic
tick enqueued once.

With ``retain_days`` (or ``retain_seconds``, for retentions shorter than a day, e.g. a soak
benchmark's minutes) set, ``tf_prune`` deletes terminal tasks finished longer ago than that,
in batches of ``batch_size``, at start and then every ``prune_interval_seconds``; right after it,
``tf_prune_workers`` deletes the records of worker and scheduler processes that stopped (or went
stale) longer ago than that and that no remaining attempt names.

Every ``heartbeat_seconds`` (checked before each pass; the sleep between passes never outlasts
it) the scheduler calls ``tf_scheduler_heartbeat`` with the id it picked at start, and its last
call on a clean stop says ``stopping``: ``tf_schedulers`` (and ``taskforge healthcheck``) tell
from that durable signal whether a scheduler is alive.

One row that a sweep cannot process (a CHECK, a trigger or a value that makes its write fail)
never stops the scheduler: the functions skip and record it (``tf_maintenance_errors``), process
the other rows, and raise a ``WARNING`` the first time they meet that error, which the scheduler
logs (once per new error, not on every pass; docs/operations.md, "A row a sweep cannot
process"). The scheduler stops (exit code 4 from the CLI) only on an error that is not about a
row and will not pass by itself, e.g. a missing schema or privilege (SQLSTATE class 42).

SIGTERM/SIGINT stop it after the current call (exit code 0). A lost connection is reopened
with capped exponential backoff and jitter.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg

from . import pooling, sql
from .database import resolve_dsn
from .worker import Backoff, DbConnection, check_schema, is_transient_error, one_line, set_process_field

__all__ = ["PeriodicTick", "Scheduler", "SchedulerConfig", "TickResult"]

log = logging.getLogger("taskforge.scheduler")

APPLICATION_NAME = "taskforge-scheduler"
#: How long after a deadline the scheduler wakes (seconds): just enough for the lease to be
#: expired when tf_recover reads clock_timestamp().
WAKE_AFTER_DEADLINE = 0.002


@dataclass(frozen=True)
class SchedulerConfig:
    """Scheduler settings (defaults as in docs/configuration.md). Times are seconds.

    max_interval_seconds:   longest sleep between passes (0 < s <= 3600).
    batch_size:             max_tasks of each tf_recover/tf_promote/tf_enqueue_periodic/tf_prune
                            call and max_rows of each tf_prune_workers call (1..100000);
                            a full batch is followed by another call at once.
    retain_days:            prune terminal tasks finished more than this many days ago, and the
                            records of processes gone as long; None = never.
    retain_seconds:         the same retention in seconds (0..3153600000, tf_prune's range), for
                            retentions shorter than a day; at most one of the two is set.
    prune_interval_seconds: time between prune rounds (> 0).
    reconnect_max_seconds:  cap of the reconnect backoff.
    name:                   shown in ``tf_schedulers`` (1..200 characters); None = HOSTNAME-PID.
    heartbeat_seconds:      interval of tf_scheduler_heartbeat (0 < s <= 3600; stale after 3 missed).
    pooler:                 ``none`` or ``transaction`` (PgBouncer in transaction mode: nothing
                            prepared; :mod:`taskforge.pooling`); empty = ``$TASKFORGE_POOLER``,
                            else ``none``. The scheduler never LISTENs.
    """

    max_interval_seconds: float = 1.0
    batch_size: int = 1000
    retain_days: float | None = None
    retain_seconds: float | None = None
    prune_interval_seconds: float = 60.0
    reconnect_max_seconds: float = 5.0
    name: str | None = None
    heartbeat_seconds: float = 5.0
    pooler: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pooler", pooling.resolve_pooler(self.pooler))
        if not 0 < self.max_interval_seconds <= 3600:
            raise ValueError(f"max_interval_seconds: must be > 0 and <= 3600, got {self.max_interval_seconds}")
        if not 1 <= self.batch_size <= 100000:
            raise ValueError(f"batch_size: must be between 1 and 100000, got {self.batch_size}")
        if self.retain_days is not None and not 0 <= self.retain_days <= 36500:
            raise ValueError(f"retain_days: must be between 0 and 36500, got {self.retain_days}")
        if self.retain_seconds is not None and not 0 <= self.retain_seconds <= 3153600000:
            raise ValueError(f"retain_seconds: must be between 0 and 3153600000, got {self.retain_seconds}")
        if self.retain_days is not None and self.retain_seconds is not None:
            raise ValueError("retain_days and retain_seconds: give at most one")
        if not 0 < self.prune_interval_seconds <= 86400:
            raise ValueError(f"prune_interval_seconds: must be > 0 and <= 86400, got {self.prune_interval_seconds}")
        if not 0 < self.reconnect_max_seconds <= 3600:
            raise ValueError(f"reconnect_max_seconds: must be > 0, got {self.reconnect_max_seconds}")
        if self.name is not None and not 1 <= len(self.name) <= 200:
            raise ValueError(f"name: must be 1 to 200 characters, got {len(self.name)}")
        if not 0 < self.heartbeat_seconds <= 3600:
            raise ValueError(f"heartbeat_seconds: must be > 0 and <= 3600, got {self.heartbeat_seconds}")

    @property
    def retention_seconds(self) -> float | None:
        """The retention in seconds (from ``retain_days`` or ``retain_seconds``); None = never prune."""
        if self.retain_seconds is not None:
            return self.retain_seconds
        return None if self.retain_days is None else self.retain_days * 86400.0

    @property
    def retention_text(self) -> str:
        """The retention as given, for log lines: ``2 day(s)`` or ``120 s``; ``off`` when unset."""
        if self.retain_seconds is not None:
            return f"{self.retain_seconds:g} s"
        return "off" if self.retain_days is None else f"{self.retain_days:g} day(s)"


@dataclass(frozen=True)
class PeriodicTick:
    """A periodic tick that a pass enqueued: the schedule, the tick (database time), its task."""

    name: str
    tick: _dt.datetime
    task_id: int


@dataclass(frozen=True)
class TickResult:
    """One pass: counts, and the seconds until the next deadlines (database time; None = none).

    ``enqueued`` counts the periodic ticks enqueued, listed in ``ticks``; ``seconds_to_next_tick``
    is the time until the next periodic tick of any schedule.
    """

    recovered: int
    failed: int
    promoted: int
    seconds_to_lease_expiry: float | None
    seconds_to_next_due: float | None
    enqueued: int = 0
    seconds_to_next_tick: float | None = None
    ticks: tuple[PeriodicTick, ...] = ()

    def deadlines(self) -> list[float]:
        """The seconds until each known next deadline (lease, backoff, periodic tick)."""
        return [
            d
            for d in (self.seconds_to_lease_expiry, self.seconds_to_next_due, self.seconds_to_next_tick)
            if d is not None
        ]


class Scheduler:
    """One scheduler process (see the module docstring). Use :meth:`run` from the main thread."""

    def __init__(
        self, dsn: str | None = None, config: SchedulerConfig | None = None, logger: logging.Logger | None = None
    ) -> None:
        self.dsn = resolve_dsn(dsn)
        self.config = config or SchedulerConfig()
        self.log = logger or log
        self._stop = threading.Event()
        self._db = DbConnection(
            self.dsn,
            APPLICATION_NAME,
            interrupt=self._stop,
            backoff_cap=self.config.reconnect_max_seconds,
            logger=self.log,
            pooler=self.config.pooler,
            notice_handler=self._on_notice,
        )
        self.totals = {
            "recovered": 0,
            "failed": 0,
            "promoted": 0,
            "enqueued": 0,
            "pruned": 0,
            "pruned_workers": 0,
            "pruned_schedulers": 0,
        }
        self.scheduler_id = uuid.uuid4()  # one per process start (tf_schedulers)
        self.name = self.config.name or f"{socket.gethostname()}-{os.getpid()}"[:200]
        self._next_beat = 0.0  # monotonic time of the next tf_scheduler_heartbeat

    def stop(self) -> None:
        """Ask the loop to end after the current call."""
        self._stop.set()

    def tick(self) -> TickResult:
        """One tf_make_partitions call, then one tf_recover + tf_promote + tf_enqueue_periodic pass
        (raises psycopg errors)."""
        self._db.execute(sql.MAKE_PARTITIONS, {}, what="make partitions")
        rows = self._db.execute(
            sql.SCHEDULER_TICK, {"max_tasks": self.config.batch_size}, what="recover/promote/enqueue_periodic"
        )
        recovered, failed, promoted, enqueued, to_expiry, to_due, to_tick, names, ticks, task_ids = rows[0]
        periodic = tuple(PeriodicTick(n, t, i) for n, t, i in zip(names, ticks, task_ids, strict=True))
        return TickResult(recovered, failed, promoted, to_expiry, to_due, enqueued, to_tick, periodic)

    def heartbeat(self, *, stopping: bool = False) -> None:
        """Record this process in ``tf_schedulers`` (raises psycopg errors)."""
        params = {
            "scheduler_id": self.scheduler_id,
            "name": self.name,
            "hostname": socket.gethostname()[:255],
            "pid": os.getpid(),
            "heartbeat_seconds": self.config.heartbeat_seconds,
            "stopping": stopping,
        }
        self._db.execute(sql.SCHEDULER_HEARTBEAT, params, what="scheduler heartbeat")
        self._next_beat = time.monotonic() + self.config.heartbeat_seconds

    def prune(self) -> int:
        """Delete terminal tasks older than the retention, batch after batch, then the records of
        processes gone as long (:meth:`prune_processes`). Returns the count of tasks."""
        seconds = self.config.retention_seconds
        if seconds is None:
            return 0
        total = 0
        while not self._stop.is_set():
            deleted = self._db.execute(
                sql.PRUNE, {"older_than_seconds": seconds, "max_tasks": self.config.batch_size}, what="prune"
            )[0][0]
            total += deleted
            if deleted < self.config.batch_size:
                break
        if total:
            self.log.info("pruned %d terminal task(s) finished more than %s ago", total, self.config.retention_text)
        self.totals["pruned"] += total
        self.prune_processes()
        return total

    def prune_processes(self) -> tuple[int, int]:
        """Delete the workers and schedulers rows of processes stopped or stale for longer than
        the retention that no attempt names any more (``tf_prune_workers``), batch after batch.
        Returns the counts (workers, schedulers)."""
        seconds = self.config.retention_seconds
        if seconds is None:
            return 0, 0
        params = {"older_than_seconds": seconds, "max_rows": self.config.batch_size}
        workers = schedulers = 0
        while not self._stop.is_set():
            deleted_workers, deleted_schedulers = self._db.execute(sql.PRUNE_WORKERS, params, what="prune workers")[0]
            workers += deleted_workers
            schedulers += deleted_schedulers
            if max(deleted_workers, deleted_schedulers) < self.config.batch_size:
                break
        if workers or schedulers:
            self.log.info(
                "pruned the records of %d worker(s) and %d scheduler(s) gone more than %s ago",
                workers,
                schedulers,
                self.config.retention_text,
            )
        self.totals["pruned_workers"] += workers
        self.totals["pruned_schedulers"] += schedulers
        return workers, schedulers

    def run(self, *, install_signal_handlers: bool = True) -> int:
        """Loop until stopped; returns the exit code (0). Raises at start when the database is
        unreachable, lacks the schema, or has a newer SQL API version (SchemaVersionError)."""
        previous: dict[signal.Signals, Any] = {}
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            check_schema(self._db.connection())
            set_process_field("scheduler_id", str(self.scheduler_id))  # on every JSON log line
            cfg = self.config
            self.log.info(
                "scheduler started: max interval %gs, batch %d, retention %s",
                cfg.max_interval_seconds,
                cfg.batch_size,
                f"{cfg.retention_text}, pruned every {cfg.prune_interval_seconds:g}s"
                if cfg.retention_seconds is not None
                else "off",
            )
            self._loop()
            try:
                self.heartbeat(stopping=True)
            except psycopg.Error as exc:  # it then shows as stale, not stopped
                self.log.warning("could not record the stop in tf_schedulers: %s", one_line(exc))
            self.log.info(
                "scheduler stopped (recovered %d, ended %d, promoted %d, periodic ticks enqueued %d, pruned %d, "
                "process records pruned %d)",
                self.totals["recovered"],
                self.totals["failed"],
                self.totals["promoted"],
                self.totals["enqueued"],
                self.totals["pruned"],
                self.totals["pruned_workers"] + self.totals["pruned_schedulers"],
            )
            return 0
        finally:
            self._db.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_notice(self, diag: psycopg.errors.Diagnostic) -> None:
        """Log what the database reports during a call: a WARNING (a row a sweep skipped and
        recorded in tf_maintenance_errors, raised once per new error; a periodic tick whose key
        another task holds) at WARNING level with its detail, anything else at DEBUG."""
        message = " ".join((diag.message_primary or "").split()).removeprefix("taskforge: ")
        if (diag.severity_nonlocalized or diag.severity) == "WARNING":
            detail = " ".join((diag.message_detail or "").split())
            self.log.warning("%s%s", message, f" ({detail})" if detail else "")
        else:
            self.log.debug("database notice: %s", message)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.log.info("%s received: stopping", signal.Signals(signum).name)
        self._stop.set()

    def _loop(self) -> None:
        cfg = self.config
        backoff = Backoff(cap=cfg.reconnect_max_seconds)
        next_prune = time.monotonic() if cfg.retention_seconds is not None else None
        idle_spins = 0
        while not self._stop.is_set():
            try:
                if time.monotonic() >= self._next_beat:
                    self.heartbeat()
                if next_prune is not None and time.monotonic() >= next_prune:
                    self.prune()
                    next_prune = time.monotonic() + cfg.prune_interval_seconds
                result = self.tick()
            except psycopg.Error as exc:
                if not is_transient_error(exc):
                    raise
                delay = backoff.next_delay()
                self.log.warning("database call failed (transient): %s; retrying in %.2f s", one_line(exc), delay)
                self._stop.wait(delay)
                continue
            backoff.reset()
            self._account(result)
            if max(result.recovered + result.failed, result.promoted, result.enqueued) >= cfg.batch_size:
                idle_spins = 0
                continue  # a full batch: there may be more right now
            self._stop.wait(min(self._sleep_seconds(result, idle_spins), max(0.0, self._next_beat - time.monotonic())))
            progressed = result.recovered + result.failed + result.promoted + result.enqueued > 0
            overdue = any(d <= 0 for d in result.deadlines())
            # A deadline already past but nothing done means the row was locked (being renewed or
            # finalized right now, or a periodic tick being enqueued by another scheduler): back
            # off a little instead of spinning.
            idle_spins = idle_spins + 1 if overdue and not progressed else 0

    def _sleep_seconds(self, result: TickResult, idle_spins: int) -> float:
        deadlines = result.deadlines()
        if not deadlines:
            return self.config.max_interval_seconds
        delay = max(0.0, min(deadlines)) + WAKE_AFTER_DEADLINE
        if min(deadlines) <= 0 and idle_spins:
            delay = WAKE_AFTER_DEADLINE * (2 ** min(idle_spins, 10))
        return min(delay, self.config.max_interval_seconds)

    def _account(self, result: TickResult) -> None:
        self.totals["recovered"] += result.recovered
        self.totals["failed"] += result.failed
        self.totals["promoted"] += result.promoted
        if result.recovered or result.failed:
            self.log.info(
                "recovered %d expired lease(s): %d requeued, %d ended (budget spent or cancelled)",
                result.recovered + result.failed,
                result.recovered,
                result.failed,
            )
        if result.promoted:
            self.log.info("promoted %d retrying task(s) to QUEUED", result.promoted)
        self.totals["enqueued"] += result.enqueued
        for tick in result.ticks:
            self.log.info(
                "periodic schedule %s: enqueued task %d for the tick of %s",
                tick.name,
                tick.task_id,
                tick.tick.isoformat(),
            )
