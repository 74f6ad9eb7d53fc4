"""The worker process as a whole: start, run its threads, stop on signals, exit.

Threads: the dispatcher (claims and finalizes, :mod:`.dispatch`), the renewer (:mod:`.leases`),
the heartbeat, the hung-statement watchdog and the listener (:mod:`.heartbeat`); sync handler slots, started as sync
attempts arrive, never more than those held at once (:mod:`.execute`; with ``concurrency`` 1
the dispatcher runs a sync handler itself); and, only when the worker claims task types with
``async def`` handlers, the event loop that runs them and its watchdog (:mod:`.aio`). Each
database-facing thread has its own connection, so a slow handler, busy slots, a stalled event
loop or a reconnect elsewhere never delay a lease renewal or a heartbeat. Handlers that finalize
in their own transaction (``ctx.transaction()``) take connections from pools of their own
(:mod:`.transaction`), opened at first use.

Stopping: the first SIGTERM/SIGINT stops claiming; running handlers get ``grace_seconds`` to
finish while renewals continue; their attempts are finalized; the worker deregisters and exits
0. A second signal, or the end of the grace period, exits at once (code 1) without finalizing:
the unfinished tasks keep their leases until they expire, then ``tf_recover`` requeues them. A
clean stop never waits long for a statement: it closes the renew and heartbeat connections,
joins its threads for at most 5 s and deregisters for at most 10 s; a second signal during it
exits at once. An immediate exit closes every connection of the worker for good.

Time: every decision about a lease is made by the database (``clock_timestamp()`` inside the
``tf_*`` functions). The worker schedules its own calls on ``time.monotonic()`` and never
compares its wall clock with a database timestamp.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from .. import handlers as _handlers, sql
from ..database import resolve_dsn
from ..handlers import HandlerRegistry
from ..pooling import TRANSACTION, milliseconds
from ..tracing import AttemptTracing
from .aio import AsyncRunner
from .attempts import AttemptTable, RunningAttempt
from .config import APPLICATION_NAME, DEREGISTER_SECONDS, STOP_JOIN_SECONDS, WorkerConfig
from .connection import DbConnection, is_lock_timeout, one_line
from .dispatch import Dispatcher
from .execute import Slots
from .heartbeat import Heartbeat, Listener, Watchdog, stuck_after
from .leases import Renewer
from .logs import set_process_field
from .permits import RunPermits
from .startup import WorkerConfigError, check_schema
from .transaction import TransactionPools

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["EXIT_ERROR", "EXIT_FORCED", "EXIT_OK", "Worker"]

log = logging.getLogger("taskforge.worker")

#: Exit codes of ``taskforge worker``: clean stop; forced exit with unfinished tasks (second
#: signal or grace period over); stopped because of an error after start.
EXIT_OK, EXIT_FORCED, EXIT_ERROR = 0, 1, 1


class Worker:
    """One worker process (see the module docstring). Use :meth:`run` from the main thread.

    ``tracer_provider``: the OpenTelemetry provider of the attempts' spans (default: the global
    one, once set; taskforge.tracing).
    """

    def __init__(
        self,
        dsn: str | None = None,
        config: WorkerConfig | None = None,
        registry: HandlerRegistry | None = None,
        logger: logging.Logger | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.dsn = resolve_dsn(dsn)
        self.config = cfg = config or WorkerConfig()
        self.registry = registry if registry is not None else _handlers.registry
        self.log = logger or log
        self.worker_id: str | None = None
        self.task_types: list[str] = []
        self.name = cfg.name or f"{socket.gethostname()}-{os.getpid()}"[:200]

        self._stopping = threading.Event()  # claim nothing new
        self._force = threading.Event()  # exit now
        self._halt = threading.Event()  # stops renewer, heartbeat and listener
        self._exit_code = EXIT_OK
        self._grace_deadline: float | None = None
        self._signals = 0
        self._threads: list[threading.Thread] = []
        self.attempts = AttemptTable()

        cap = cfg.reconnect_max_seconds
        self.work_db = DbConnection(
            self.dsn,
            f"{APPLICATION_NAME}/work",
            interrupt=self._force,
            backoff_cap=cap,
            logger=self.log,
            lock_timeout=cfg.lock_timeout_seconds,
            statement_timeout=cfg.statement_timeout_seconds,
            pooler=cfg.pooler,
        )
        self.renew_db = DbConnection(
            self.dsn,
            f"{APPLICATION_NAME}/renew",
            interrupt=self._halt,
            backoff_cap=cap,
            logger=self.log,
            lock_timeout=cfg.lock_timeout_seconds,
            statement_timeout=cfg.statement_timeout_seconds,
            pooler=cfg.pooler,
        )
        self.heartbeat_db = DbConnection(
            self.dsn,
            f"{APPLICATION_NAME}/heartbeat",
            interrupt=self._halt,
            backoff_cap=cap,
            logger=self.log,
            lock_timeout=cfg.heartbeat_lock_timeout_seconds,
            statement_timeout=cfg.heartbeat_statement_timeout_seconds,
            pooler=cfg.pooler,
        )
        # With one slot the dispatcher runs a sync handler itself: it would only wait for that
        # slot anyway, and this saves two thread hand-offs per task. Not with prefetch: the
        # dispatcher's round trip must overlap the handler that runs.
        self.inline = cfg.concurrency == 1 and cfg.prefetch == 0
        self.dispatcher = Dispatcher(
            config=cfg,
            db=self.work_db,
            attempts=self.attempts,
            start_attempts=self._start_attempts,
            on_fatal=self._fatal,
            stopping=self._stopping,
            force=self._force,
            logger=self.log,
        )
        #: The connections of ``ctx.transaction()`` (no connection until a handler asks for one).
        self.transactions = TransactionPools(
            self.dsn, size=cfg.transaction_pool_size, connect_kwargs=self.work_db.connect_kwargs, logger=self.log
        )
        self.dispatcher.transactions = self.transactions
        #: Whether attempts run in spans (taskforge.tracing): ``tracer_provider``, else the global one.
        self.tracing = AttemptTracing(tracer_provider)
        # With prefetch the process holds more attempts than slots: they start in claim order,
        # sync and async alike, as `concurrency` permits free (permits.py).
        self.permits = RunPermits(cfg.concurrency, self._hand_over, self.log) if cfg.prefetch else None
        self.slots = Slots(
            0 if self.inline else cfg.concurrency,
            self.registry,
            self.dispatcher.finished if self.permits is None else self.permits.releasing_one(self.dispatcher.finished),
            self.log,
            self.tracing,
        )
        #: Task types claimed whose handler is ``async def`` (known after :meth:`start`).
        self.async_types: frozenset[str] = frozenset()
        self.aio = AsyncRunner(
            self.registry,
            self.attempts,
            self.dispatcher.finished_many
            if self.permits is None
            else self.permits.releasing_many(self.dispatcher.finished_many),
            self._halt,
            self.log,
            on_close=self.transactions.aclose,
            tracing=self.tracing,
        )
        self.renewer = Renewer(
            config=cfg,
            db=self.renew_db,
            attempts=self.attempts,
            halt=self._halt,
            logger=self.log,
            on_interrupt=self.aio.interrupt,
        )
        self.heartbeat = Heartbeat(
            config=cfg,
            db=self.heartbeat_db,
            halt=self._halt,
            on_fatal=self._fatal,
            logger=self.log,
        )
        # Behind a transaction-mode pooler, notifications come only over a direct connection.
        self.listener = Listener(
            dsn=cfg.listen_dsn if cfg.pooler == TRANSACTION and cfg.listen_dsn else self.dsn,
            config=cfg,
            connect_kwargs=self.heartbeat_db.connect_kwargs,
            wake=self.dispatcher.claim_soon,
            halt=self._halt,
            logger=self.log,
        )
        self.watchdog = Watchdog(
            watched=(
                (self.work_db, stuck_after(cfg.statement_timeout_seconds)),
                (self.renew_db, stuck_after(cfg.statement_timeout_seconds)),
                (self.heartbeat_db, stuck_after(cfg.heartbeat_statement_timeout_seconds)),
            ),
            halt=self._halt,
            on_hung=self.listener.resubscribe.set,
        )
        self._dispatcher_done = threading.Event()

    # --- public control ------------------------------------------------------------------------

    @property
    def threads(self) -> list[threading.Thread]:
        """The threads this worker started (renewer, heartbeat, listener, dispatcher, the event
        loop and its watchdog, and the sync slots started so far)."""
        return [*self._threads, *self.slots.threads]

    @property
    def busy(self) -> int:
        """Attempts claimed and not yet finalized."""
        return len(self.attempts)

    def request_stop(self) -> None:
        """Graceful stop (what the first SIGTERM/SIGINT does): claim nothing new, let handlers finish."""
        if not self._stopping.is_set():
            self._grace_deadline = time.monotonic() + self.config.grace_seconds
            self._stopping.set()
            self.dispatcher.wake.set()

    def force_stop(self) -> None:
        """Exit at once without finalizing (what a second signal does)."""
        self._force.set()
        self.request_stop()

    # --- startup -------------------------------------------------------------------------------

    def start(self) -> None:
        """Check the schema and the handlers, and register the worker (raises WorkerStartupError,
        SchemaVersionError, WorkerConfigError or psycopg.Error when it cannot start)."""
        conn = self.work_db.connection()  # fail fast at startup: connection errors are raised
        check_schema(conn)
        allowed = self.registry.task_types()
        if self.config.task_types:
            unknown = [t for t in self.config.task_types if t not in allowed]
            if unknown:
                raise WorkerConfigError(
                    f"task type {', '.join(unknown)}: no handler registered on this worker "
                    f"(registered: {', '.join(allowed) or 'none'}; load yours with --import)"
                )
            self.task_types = sorted(self.config.task_types)
        else:
            self.task_types = allowed
        if not self.task_types:
            raise WorkerConfigError(
                "no task handlers are registered: load your handler modules with --import MODULE "
                "(the synthetic demo types: --import taskforge.synthetic)"
            )
        queues = list(self.config.queues) if self.config.queues else None
        row = conn.execute(
            sql.REGISTER_WORKER,
            {
                "name": self.name,
                "hostname": socket.gethostname()[:255],
                "pid": os.getpid(),
                "queues": queues,
                "task_types": self.task_types,
                "heartbeat_seconds": self.config.heartbeat_seconds,
            },
        ).fetchone()
        self.worker_id = str(row[0]) if row else None
        set_process_field("worker_id", self.worker_id)  # on every JSON log line from now on
        for part in (self.dispatcher, self.renewer, self.heartbeat):
            part.worker_id = self.worker_id
        self.dispatcher.task_types = self.task_types
        self.async_types = self.dispatcher.async_types = frozenset(
            t for t in self.task_types if self.registry.is_async(t)
        )
        cfg = self.config
        self.log.info(
            "worker %s started: name=%s queues=%s task_types=%s%s concurrency=%d prefetch=%d "
            "lease=%gs renew every %gs lock_timeout=%gms statement_timeout=%gms heartbeat=%gs poll=%gs grace=%gs",
            self.worker_id,
            self.name,
            ",".join(queues) if queues else "(all)",
            ",".join(self.task_types),
            f" (async: {','.join(sorted(self.async_types))})" if self.async_types else "",
            cfg.concurrency,
            cfg.prefetch,
            cfg.lease_seconds,
            cfg.renew_seconds,
            milliseconds(cfg.lock_timeout_seconds),
            milliseconds(cfg.statement_timeout_seconds),
            cfg.heartbeat_seconds,
            cfg.poll_seconds,
            cfg.grace_seconds,
        )

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=self._guarded(target, name), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _guarded(self, target: Callable[[], None], name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException:
                self.log.exception("internal error in the %s thread; stopping the worker", name)
                self._fatal(f"internal error in the {name} thread")
            finally:
                if name == "dispatcher":
                    self._dispatcher_done.set()

        return run

    def _start_attempts(self, items: list[RunningAttempt]) -> Sequence[RunningAttempt]:
        """The dispatcher's hand-off of a turn's claims: async ones to the event loop, sync ones
        to the slots, in one call each, or, with ``concurrency`` 1, run here (returned, ended);
        with ``--prefetch``, to the permits, which start them in claim order as slots free."""
        if self.permits is not None:
            self.permits.offer(items)
            return ()
        sync = self._to_loop(items)
        if sync and self.inline:
            for item in sync:
                item.outcome = self.slots.run(item)
            return sync
        if sync:
            self.slots.submit_many(sync)
        return ()

    def _to_loop(self, items: list[RunningAttempt]) -> list[RunningAttempt]:
        """Hand the async attempts of ``items`` to the event loop; return the sync ones."""
        if not self.async_types:
            return items
        sync = [item for item in items if not item.is_async]
        if len(sync) < len(items):
            self.aio.submit_many([item for item in items if item.is_async])
        return sync

    def _hand_over(self, items: list[RunningAttempt]) -> None:
        """Start attempts given a permit (--prefetch): async ones on the loop, sync ones in the slots."""
        sync = self._to_loop(items)
        if sync:
            self.slots.submit_many(sync)

    def _fatal(self, reason: str) -> None:
        self._exit_code = EXIT_ERROR
        self.request_stop()

    # --- main ----------------------------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = True, exit_process: bool = False) -> int:
        """Start, work until stopped, and return the exit code (see EXIT_* constants).

        Raises WorkerStartupError / SchemaVersionError / psycopg.Error when it cannot start.
        With ``exit_process=True`` a forced exit ends the process with ``os._exit`` (handler
        threads cannot be interrupted); otherwise run() returns and leaves them running.
        Must be called from the main thread when install_signal_handlers is True.
        """
        previous: dict[signal.Signals, Any] = {}
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            try:
                self.start()
            except BaseException:
                self.work_db.close()
                raise
            if self.async_types:
                self.aio.open()
                self._spawn(self.aio.run, "event-loop")
                self._spawn(self.aio.watch, "event-loop-watchdog")
            self._spawn(self.renewer.run, "renewer")
            self._spawn(self.heartbeat.run, "heartbeat")
            self._spawn(self.watchdog.run, "watchdog")
            if self.config.listens:
                self._spawn(self.listener.run, "listener")
            else:
                self.log.info(
                    "no LISTEN behind a transaction-mode pooler (no --listen-dsn): claiming every %gs",
                    self.config.poll_seconds,
                )
            self._spawn(self.dispatcher.run, "dispatcher")
            if self._wait_until_done():
                return self._forced_exit(exit_process)
            return self._clean_exit()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1
        name = signal.Signals(signum).name
        if self._signals == 1:
            held = self.busy
            running = held if self.permits is None else self.permits.running
            # With --prefetch it also holds attempts claimed ahead (they run within the grace too).
            waiting = f" and {held - running} more it holds" if held > running else ""
            self.log.info(
                "%s received: claiming nothing new; waiting up to %gs for %d running task(s)%s "
                "(send it again to exit at once)",
                name,
                self.config.grace_seconds,
                running,
                waiting,
            )
            self.request_stop()
        else:
            self.log.warning("%s received again: exiting now", name)
            self.force_stop()

    def _wait_until_done(self) -> bool:
        """Main thread: wait for a clean stop (True when the stop has to be forced)."""
        while True:
            if self._force.is_set():
                return True
            if self._stopping.is_set() and self._dispatcher_done.is_set():
                return False
            if (
                self._stopping.is_set()
                and self._grace_deadline is not None
                and self.busy > 0
                and time.monotonic() >= self._grace_deadline
            ):
                self.log.warning("grace period of %gs is over", self.config.grace_seconds)
                self._force.set()
                return True
            self._force.wait(0.1)

    def _stop_threads(self) -> None:
        self._halt.set()
        self.dispatcher.wake.set()
        self.slots.stop()
        if self.async_types:
            self.aio.stop()

    def _clean_exit(self) -> int:
        """Main thread, nothing running: stop the threads, deregister, close. Every wait has a
        deadline (monotonic) and a second signal turns it into :meth:`_forced_exit`."""
        self._stop_threads()
        # The renewer and the heartbeat are done: interrupt a statement they may be stuck in.
        self.renew_db.close(final=True)
        self.heartbeat_db.close(final=True)
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for thread in self.threads:
            while thread.is_alive() and not self._force.is_set() and time.monotonic() < deadline:
                thread.join(timeout=0.1)
        if self._force.is_set():
            return self._forced_exit(False)
        alive = [t.name for t in self.threads if t.is_alive()]
        if alive:
            self.log.warning("thread(s) %s did not stop within %gs; going on", ", ".join(alive), STOP_JOIN_SECONDS)
        until = time.monotonic() + DEREGISTER_SECONDS
        while True:
            try:
                self.work_db.execute(
                    sql.DEREGISTER_WORKER,
                    {"worker_id": self.worker_id},
                    retry=lambda _exc: time.monotonic() < until and not self._force.is_set(),
                    what="deregister",
                )
                self.log.info("worker %s deregistered; exiting", self.worker_id)
                break
            except psycopg.Error as exc:
                if self._force.is_set():
                    return self._forced_exit(False)
                if is_lock_timeout(exc) and time.monotonic() < until:
                    # Another transaction holds the worker's row: try again within the deadline.
                    if self._force.wait(0.2):
                        return self._forced_exit(False)
                    continue
                self._deregister_failed(exc, "tf_workers will show it stale")
                break
        self.work_db.close(final=True)
        self.transactions.close()
        return self._exit_code

    def _deregister_failed(self, exc: BaseException, consequence: str | None) -> None:
        """Log why deregistering failed. TF404: the worker's row no longer exists (deleted by
        tf_prune_workers after the worker was silent for longer than the retention, or by
        hand), so there is nothing to mark stopped and nothing shows it stale."""
        if getattr(exc, "sqlstate", None) == "TF404":
            self.log.warning(
                "worker %s was not deregistered: its row no longer exists (pruned by tf_prune_workers or deleted): %s",
                self.worker_id,
                one_line(exc),
            )
            return
        suffix = f" ({consequence})" if consequence else ""
        self.log.warning("could not deregister worker %s: %s%s", self.worker_id, one_line(exc), suffix)

    def _forced_exit(self, exit_process: bool) -> int:
        unfinished = sorted(f"{r.ctx.task_id}/{r.ctx.attempt_number}" for r in self.attempts.snapshot())
        self.log.warning(
            "exiting with %d unfinished attempt(s) [%s] (task/attempt); they are not finalized: "
            "their leases expire within %gs and tf_recover requeues them",
            len(unfinished),
            ", ".join(unfinished),
            self.config.lease_seconds,
        )
        self._force.set()
        self._stop_threads()
        # Stop every statement still running (a finalize, a renewal, a heartbeat) and open no
        # connection again: handlers that are still running are not finalized.
        for db in (self.work_db, self.renew_db, self.heartbeat_db):
            db.close(final=True)
        self.transactions.close(timeout=1.0)
        # Best effort, on a fresh short-lived connection (sent once, never retried): the work
        # connection may be busy.
        exit_db = DbConnection(
            self.dsn,
            f"{APPLICATION_NAME}/exit",
            connect_timeout=2,
            logger=self.log,
            lock_timeout=1.0,
            statement_timeout=2.0,
            pooler=self.config.pooler,
        )
        try:
            exit_db.execute(sql.DEREGISTER_WORKER, {"worker_id": self.worker_id}, what="deregister")
            self.log.info("worker %s deregistered", self.worker_id)
        except Exception as exc:  # noqa: BLE001 - best effort; tf_workers shows it stale otherwise
            self._deregister_failed(exc, None)
        finally:
            exit_db.close(final=True)
        if exit_process:
            logging.shutdown()
            os._exit(EXIT_FORCED)
        return EXIT_FORCED
