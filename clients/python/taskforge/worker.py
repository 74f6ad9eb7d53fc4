"""The worker process: ``tf_claim`` -> handler -> ``tf_finalize``, in a loop.

Threads and connections (autocommit; renewals, heartbeats and the listener each use
connections of their own, so a slow handler, busy slots or a reconnect elsewhere never delay a
lease renewal or a heartbeat):

* **dispatcher** (``taskforge-worker/work`` connections, shared with the slots' finalize
  calls): claims up to ``free slots`` tasks (``max_tasks`` = free slots) whenever a slot is free
  and it is woken, or every ``poll_seconds``;
* **slots** (``concurrency`` threads): run one handler each and finalize its attempt;
* **renewers** (``min(concurrency, 4)`` threads, ``taskforge-worker/renew`` connections): renew
  each running task's lease on its own schedule, every ``lease_seconds / 3`` seconds (monotonic
  clock), and keep ``ctx.cancel_requested`` current;
* **heartbeat** (``taskforge-worker/heartbeat``): ``tf_heartbeat`` every ``heartbeat_seconds``;
* **listener** (``taskforge-worker/listen``): ``LISTEN taskforge`` and wake the dispatcher when
  a notification names one of its queues; re-subscribes on a fresh connection after any error.

Row locks: tf_renew and tf_finalize lock the task row and wait for any transaction that holds
it (a client's open ``BEGIN; SELECT tf_cancel(...)``, an operator's UPDATE). The work and renew
connections therefore run with ``lock_timeout`` = ``min(1 s, lease_seconds / 10)``
(:attr:`WorkerConfig.lock_timeout_seconds`). A statement that gives up on a lock (SQLSTATE 55P03
lock_not_available) changed nothing and is not a lost lease: a renewal is retried after a short
delay while the other tasks' renewals go on; a finalize is retried with the same worker id and
attempt number after a short backoff, holding no connection meanwhile. Statements run on
:class:`DbLanes`: one connection normally, and another one (up to a small limit) whenever every
open one has been busy for ``min(0.1 s, lock_timeout / 2)``, so one statement waiting for a lock
does not hold up the renewals, claims or finalizes of other tasks. The work and renew
connections also run with ``statement_timeout`` = ``max(lock_timeout, min(lease / 3, 30 s))``
(:attr:`WorkerConfig.statement_timeout_seconds`), the heartbeat connection with ``lock_timeout``
= ``min(1 s, heartbeat / 2)`` and ``statement_timeout`` = ``max(that, min(heartbeat, 30 s))``; a
work or renew statement still running ``statement_timeout * 1.25 + 0.25 s`` (a server that does
not answer) has its connection closed by the heartbeat thread. These settings are sent after
``$PGOPTIONS`` and the DSN's ``options``, which are kept.

Errors: only ``renewed = false`` from tf_renew loses a lease. Permanent errors (SQLSTATE TFxxx,
classes 42, 22, 23) are handled as refusals; every other error is transient
(:func:`is_transient_error`): its connection is closed and the call is tried again.

Time: every decision about a lease is made by the database (``clock_timestamp()`` inside the
``tf_*`` functions). The worker schedules its own calls with ``time.monotonic()`` intervals and
never compares the wall clock with a database timestamp, so a wrong local clock changes nothing.
It never calls ``time.sleep`` (waits are ``threading.Event.wait`` on the monotonic clock).

Stopping: the first SIGTERM/SIGINT stops claiming; running handlers get ``grace_seconds`` to
finish while renewals continue; their attempts are finalized; the worker deregisters and exits
0. A second signal, or the end of the grace period, exits at once (code 1) without finalizing:
the unfinished tasks keep their leases until they expire, then ``tf_recover`` requeues them.
A clean stop never waits long for a statement: it cancels those of the renew and heartbeat
connections, joins its threads for at most 5 s and deregisters for at most 10 s; a second
signal during it exits at once. An immediate exit closes every connection of the worker for good.

Outages: a lost connection is reopened with capped exponential backoff and jitter. A finalize
whose connection dropped is sent again with the same worker id and attempt number; the guard in
``tf_finalize`` makes a repeat harmless (it answers ``accepted = false`` if the first one landed).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import queue as _queue
import random
import re
import signal
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import psycopg
from psycopg.conninfo import conninfo_to_dict

from . import SCHEMA_VERSION, sql
from . import handlers as _handlers
from .db import resolve_dsn
from .handlers import HandlerRegistry, Outcome, TaskContext, error_json, run_handler

__all__ = [
    "WorkerConfig", "Worker", "WorkerStartupError", "WorkerConfigError", "SchemaVersionError", "DbConnection", "DbLanes",
    "Backoff", "check_schema", "configure_logging", "is_lock_timeout", "is_transient_error",
    "EXIT_OK", "EXIT_FORCED", "EXIT_ERROR",
]

log = logging.getLogger("taskforge.worker")

#: Exit codes of ``taskforge worker``: clean stop; forced exit with unfinished tasks (second
#: signal or grace period over); stopped because of an error after start.
EXIT_OK, EXIT_FORCED, EXIT_ERROR = 0, 1, 1

QUEUE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")
APPLICATION_NAME = "taskforge-worker"
#: TCP keepalives so a silently vanished server is noticed (applied unless the DSN sets them).
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
#: Most connections a :class:`DbLanes` of the worker opens (renewals; claims and finalizes).
MAX_LANES = 4
#: A lane busy this long (seconds, or lock_timeout / 2 if shorter) counts as stuck: the next
#: statement gets another lane instead of waiting for it.
LANE_STUCK_SECONDS = 0.1
#: An extra lane (not the first) idle this long (seconds) is closed.
LANE_IDLE_CLOSE_SECONDS = 10.0
#: While one task's renewal or finalize keeps timing out on a lock, log it at most this often (s).
LOCK_LOG_EVERY_SECONDS = 10.0
#: Cap of the backoff (seconds) between tries of a finalize that timed out on a row lock.
FINALIZE_LOCK_RETRY_CAP_SECONDS = 2.0
#: Cap (seconds) of the statement_timeout of the worker's connections.
STATEMENT_TIMEOUT_CAP_SECONDS = 30.0
#: How long (seconds) closing a connection waits for a statement running on it to end after
#: cancelling it, before it shuts the socket down.
CLOSE_WAIT_SECONDS = 1.0
#: How often (seconds) the heartbeat thread looks for statements hung past their statement_timeout.
HOUSEKEEPING_SECONDS = 0.25
#: How long (seconds, monotonic) a clean stop may spend joining its threads, and deregistering.
STOP_JOIN_SECONDS = 5.0
DEREGISTER_SECONDS = 10.0
#: SQLSTATE classes of errors that are the caller's fault and are not retried: syntax error or
#: access rule violation, data exception, integrity constraint violation (the API's own
#: refusals, SQLSTATE TFxxx, are not retried either).
PERMANENT_SQLSTATE_CLASSES = frozenset({"42", "22", "23"})


class WorkerStartupError(RuntimeError):
    """The worker cannot start (schema missing, bad configuration); the message says why."""


class WorkerConfigError(WorkerStartupError):
    """The configuration names task types that have no handler (or there are none)."""


class SchemaVersionError(WorkerStartupError):
    """tf_schema_version() is newer than :data:`taskforge.SCHEMA_VERSION`."""


def configure_logging(level: str | int = "INFO", process: str = "taskforge") -> None:
    """One readable line per event on stderr: ``2025-01-31T12:00:00.123Z INFO taskforge.worker[pid]: ...``.

    Timestamps are the local wall clock in UTC (for people; no decision uses them).
    """
    handler = logging.StreamHandler()
    formatter = logging.Formatter("%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s[%(process)d]: %(message)s",
                                  datefmt="%Y-%m-%dT%H:%M:%S")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    root = logging.getLogger("taskforge")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    root.propagate = False


def is_transient_error(exc: BaseException) -> bool:
    """True for errors after which the same call may succeed later (on a new connection).

    Permanent (False): the API's own refusals (SQLSTATE ``TFxxx``, e.g. TF400, TF404, TF409) and
    programming errors (SQLSTATE classes 42, 22, 23) and anything that is not a psycopg error.
    Transient (True): every other database error, e.g. connection errors (no SQLSTATE, class 08,
    InterfaceError for a closed connection), 25006 read_only_sql_transaction (a failover),
    40001/40P01 (serialization failure, deadlock), 53xxx (insufficient resources), 55xxx (incl.
    55P03 lock_not_available), 57xxx (incl. 57014 query_canceled = statement_timeout, 57P01
    admin_shutdown) and 58xxx.
    """
    if not isinstance(exc, psycopg.Error):
        return False
    if isinstance(exc, psycopg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None)
    if not state:
        return isinstance(exc, psycopg.OperationalError)
    if state.upper().startswith("TF"):
        return False
    return state[:2] not in PERMANENT_SQLSTATE_CLASSES


def is_lock_timeout(exc: BaseException) -> bool:
    """True for SQLSTATE 55P03 lock_not_available: the statement gave up waiting for a lock
    (``lock_timeout``) and changed nothing; the connection is fine and the call may be repeated.

    (:func:`is_transient_error` is True for it too; the worker checks this first and keeps the
    connection instead of reopening it.)
    """
    return isinstance(exc, psycopg.errors.LockNotAvailable) or getattr(exc, "sqlstate", None) == "55P03"


class Backoff:
    """Capped exponential backoff with jitter: ``min(cap, base * 2**n) * U(0.5, 1)`` seconds."""

    def __init__(self, base: float = 0.1, cap: float = 5.0) -> None:
        self.base, self.cap, self.failures = base, cap, 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * (2 ** min(self.failures, 30)))
        self.failures += 1
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


def _milliseconds(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def lock_timeout_option(dsn: str, seconds: float | None, statement_timeout: float | None = None) -> str:
    """The libpq ``options`` value for a connection with ``lock_timeout`` = seconds and
    ``statement_timeout`` (seconds; each rounded to whole milliseconds, at least 1 ms; None =
    not set). Passing ``options`` makes libpq ignore ``$PGOPTIONS``, so the value keeps, in this
    order, ``$PGOPTIONS``, the options of the DSN and then ours: a later ``-c`` wins, so ours
    override a ``lock_timeout``/``statement_timeout`` given there, and everything else is kept."""
    parts = [os.environ.get("PGOPTIONS") or "", conninfo_to_dict(dsn).get("options") or ""]
    if seconds is not None:
        parts.append(f"-c lock_timeout={_milliseconds(seconds)}")
    if statement_timeout is not None:
        parts.append(f"-c statement_timeout={_milliseconds(statement_timeout)}")
    return " ".join(p.strip() for p in parts if p.strip())


class DbConnection:
    """One autocommit connection that reopens itself after a failure.

    ``execute`` sends one statement and returns all rows. Transient errors (see
    :func:`is_transient_error`: lost connections, 25006 read-only, 57014 statement timeout, ...)
    close the connection; if ``retry`` returns True the statement is sent again on a new
    connection after a backoff wait, else the error is raised. A lock timeout
    (:func:`is_lock_timeout`) is raised at once and keeps the connection; permanent errors (TF400,
    TF404, classes 42/22/23) are raised at once. ``lock_timeout`` and ``statement_timeout``
    (seconds, None = the server's setting) are set on every connection opened, together with
    ``$PGOPTIONS`` and the DSN's options (see :func:`lock_timeout_option`). Thread-safe (one
    statement at a time); :meth:`close` never waits for a running statement for long.
    """

    def __init__(self, dsn: str, application_name: str, *, interrupt: threading.Event | None = None,
                 connect_timeout: float = 5, backoff_cap: float = 5.0, logger: logging.Logger = log,
                 lock_timeout: float | None = None, statement_timeout: float | None = None) -> None:
        self.dsn = dsn
        self.application_name = application_name
        self.interrupt = interrupt or threading.Event()
        self.connect_timeout = connect_timeout
        self.backoff = Backoff(cap=backoff_cap)
        self.log = logger
        self._conn: psycopg.Connection | None = None
        self._lock = threading.RLock()
        self._lost = False
        self._shut = False
        params = conninfo_to_dict(dsn)
        self._extra = {k: v for k, v in KEEPALIVES.items() if k not in params}
        if "connect_timeout" not in params:
            self._extra["connect_timeout"] = max(1, int(connect_timeout))
        self.lock_timeout = lock_timeout
        self.statement_timeout = statement_timeout
        options = lock_timeout_option(dsn, lock_timeout, statement_timeout)
        self._options = {"options": options} if options else {}

    def connection(self) -> psycopg.Connection:
        """The open connection, opening one if needed (raises psycopg.OperationalError, or
        psycopg.InterfaceError after :meth:`close` with ``final=True``)."""
        with self._lock:
            if self._shut:
                raise psycopg.InterfaceError(f"the {self.application_name} connection is closed for good")
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self.dsn, autocommit=True, application_name=self.application_name,
                                             **self._extra, **self._options)
                if self._lost:
                    self.log.info("reconnected to the database (%s)", self.application_name)
                    self._lost = False
                self.backoff.reset()
            return self._conn

    def close(self, *, final: bool = False, wait: float = CLOSE_WAIT_SECONDS) -> None:
        """Close the connection without waiting long for a statement running on it.

        If another thread is running a statement, it is cancelled (a cancel request to the
        server) and, if it has not ended after ``wait`` seconds (monotonic), the socket is shut
        down; that thread then gets a connection error and closes the connection itself.
        ``final=True``: no connection is opened again (later statements raise InterfaceError).
        """
        if final:
            self._shut = True
        if self._lock.acquire(blocking=False):
            try:
                conn, self._conn = self._conn, None
            finally:
                self._lock.release()
            _close_quietly(conn)
            return
        conn = self._conn  # a statement is running on it now
        if conn is not None:
            # In a thread of its own: without libpq 17 a cancel request cannot be given a timeout.
            canceller = threading.Thread(target=_cancel_quietly, args=(conn, wait), daemon=True,
                                         name=f"cancel {self.application_name}")
            canceller.start()
            canceller.join(wait)
        if self._lock.acquire(timeout=wait):
            try:
                conn, self._conn = self._conn, None
            finally:
                self._lock.release()
            _close_quietly(conn)
            return
        conn = self._conn
        if conn is not None:
            _shutdown_socket(conn)

    def execute(self, query: str, params: dict | None = None, *, retry: Callable[[], bool] | None = None,
                what: str = "statement") -> list[tuple]:
        """Run one statement and return its rows (see the class docstring for retries)."""
        while True:
            with self._lock:
                try:
                    conn = self.connection()
                    cur = conn.execute(query, params)
                    return cur.fetchall() if cur.description else []
                except Exception as exc:
                    if is_lock_timeout(exc) or not is_transient_error(exc):
                        raise
                    self.close()
                    self._lost = True
                    failure = exc
            if self._shut or retry is None or not retry():
                raise failure
            delay = self.backoff.next_delay()
            self.log.warning("%s failed: connection lost or refused, or transient error (%s): %s; retrying in %.2f s",
                             what, self.application_name, _one_line(failure), delay)
            if self.interrupt.wait(delay):
                raise failure  # interrupted (the process is exiting): give up


def _close_quietly(conn: psycopg.Connection | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection may fail again
            pass


def _cancel_quietly(conn: psycopg.Connection, timeout: float) -> None:
    try:
        conn.cancel_safe(timeout=timeout)
    except Exception:  # noqa: BLE001 - the connection may be broken already
        pass


def _shutdown_socket(conn: psycopg.Connection) -> None:
    """Shut the connection's socket down (without closing the file descriptor, which libpq
    owns): a statement blocked on it in another thread fails at once with a connection error."""
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
    except Exception:  # noqa: BLE001 - already closed
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


@dataclass(eq=False)
class _Lane:
    """One connection of a :class:`DbLanes`; times are monotonic."""

    db: DbConnection
    busy_since: float | None = None
    idle_since: float = 0.0
    aborted: float | None = None  # busy_since of the statement whose connection was closed as hung


class DbLanes:
    """Up to ``max_lanes`` autocommit connections ("lanes") for statements of one kind.

    :meth:`execute` runs one statement on an idle lane, preferring the oldest lane, and returns
    its rows. When every open lane is busy and each has been busy for at least ``stuck_after``
    seconds (a statement waiting for a lock, a connection that hangs), another lane is opened, up
    to ``max_lanes``; otherwise the caller waits for a lane. One stuck statement therefore
    delays the others by at most ``stuck_after`` seconds. An extra lane (not the first) that has
    been idle for ``idle_close_after`` seconds is closed. All times use the monotonic clock.
    Every lane is a :class:`DbConnection` with the same application_name, lock_timeout and
    statement_timeout (seconds or None) and keepalives. The first lane's connection is opened on first use, or by
    :meth:`connection`.

    Transient errors (:func:`is_transient_error`): the failed lane's connection is closed and
    the lane released; if ``retry`` returns True the statement is sent again after a capped
    exponential backoff (``backoff_cap`` seconds) during which no lane is held, else the error is
    raised. Waits (the backoff, and the wait for a free lane) end early when ``interrupt`` (or
    the ``interrupt`` given to :meth:`execute`) is set: the last error, or psycopg.OperationalError
    if none, is raised. Lock timeouts (:func:`is_lock_timeout`) and permanent errors are raised
    at once. Thread-safe.
    """

    def __init__(self, dsn: str, application_name: str, *, max_lanes: int = 1,
                 stuck_after: float = LANE_STUCK_SECONDS, idle_close_after: float = LANE_IDLE_CLOSE_SECONDS,
                 interrupt: threading.Event | None = None, backoff_cap: float = 5.0,
                 logger: logging.Logger = log, lock_timeout: float | None = None,
                 statement_timeout: float | None = None) -> None:
        if max_lanes < 1:
            raise ValueError(f"max_lanes: must be at least 1, got {max_lanes}")
        self.dsn = dsn
        self.application_name = application_name
        self.max_lanes = max_lanes
        self.stuck_after = stuck_after
        self.idle_close_after = idle_close_after
        self.interrupt = interrupt or threading.Event()
        self.backoff_cap = backoff_cap
        self.log = logger
        self.lock_timeout = lock_timeout
        self.statement_timeout = statement_timeout
        self._closed = False
        self._cond = threading.Condition()
        self._lanes: list[_Lane] = [self._new_lane()]

    def _new_lane(self) -> _Lane:
        return _Lane(DbConnection(self.dsn, self.application_name, interrupt=self.interrupt,
                                  backoff_cap=self.backoff_cap, logger=self.log, lock_timeout=self.lock_timeout,
                                  statement_timeout=self.statement_timeout),
                     idle_since=time.monotonic())

    @property
    def lanes(self) -> int:
        """How many lanes exist now (opened or to be opened on first use)."""
        with self._cond:
            return len(self._lanes)

    def connection(self) -> psycopg.Connection:
        """The first lane's open connection, opening it if needed (raises psycopg.OperationalError).

        For startup, before other threads use the lanes; statements go through :meth:`execute`.
        """
        return self._lanes[0].db.connection()

    def execute(self, query: str, params: dict | None = None, *, retry: Callable[[], bool] | None = None,
                what: str = "statement", interrupt: threading.Event | None = None) -> list[tuple]:
        """Run one statement on a lane and return its rows (see the class docstring)."""
        backoff: Backoff | None = None
        while True:
            lane = self._acquire(interrupt)
            try:
                return lane.db.execute(query, params, what=what)
            except Exception as exc:
                if is_lock_timeout(exc) or not is_transient_error(exc) or self._closed \
                        or retry is None or not retry():
                    raise
                failure = exc
            finally:
                self._release(lane)
            backoff = backoff or Backoff(cap=self.backoff_cap)
            delay = backoff.next_delay()
            self.log.warning("%s failed: connection lost or refused, or transient error (%s): %s; "
                             "retrying in %.2f s", what, self.application_name, _one_line(failure), delay)
            if self.interrupt.wait(delay) or (interrupt is not None and interrupt.is_set()):
                raise failure  # interrupted (the process is exiting): give up

    def _acquire(self, interrupt: threading.Event | None = None) -> _Lane:
        with self._cond:
            while True:
                if self.interrupt.is_set() or (interrupt is not None and interrupt.is_set()):
                    raise psycopg.OperationalError(
                        f"{self.application_name}: interrupted while waiting for a free connection")
                now = time.monotonic()
                for lane in self._lanes:
                    if lane.busy_since is None:
                        lane.busy_since = now
                        return lane
                timeout = 1.0
                if len(self._lanes) < self.max_lanes:
                    newest = max(lane.busy_since for lane in self._lanes)  # all busy: none is None
                    if now - newest >= self.stuck_after:
                        lane = self._new_lane()
                        lane.busy_since = now
                        self._lanes.append(lane)
                        count, oldest = len(self._lanes), min(x.busy_since for x in self._lanes)
                        break
                    timeout = newest + self.stuck_after - now
                # Polls the interrupt events at least every 0.1 s.
                self._cond.wait(min(max(timeout, 0.001), 0.1))
        self.log.info("%s: every connection has been busy for %.2f s or more (the longest for %.2f s); "
                      "opening connection %d of at most %d", self.application_name, now - newest,
                      now - oldest, count, self.max_lanes)
        return lane

    def _release(self, lane: _Lane) -> None:
        with self._cond:
            lane.busy_since = None
            lane.idle_since = time.monotonic()
            self._cond.notify_all()
            extra = len(self._lanes) > 1
        if extra:
            self.trim()

    def trim(self) -> None:
        """Close the extra lanes that have been idle for ``idle_close_after`` seconds."""
        closing: list[_Lane] = []
        with self._cond:
            now = time.monotonic()
            for lane in self._lanes[1:]:
                if lane.busy_since is None and now - lane.idle_since >= self.idle_close_after:
                    closing.append(lane)
            if closing:
                self._lanes = [lane for lane in self._lanes if lane not in closing]
        for lane in closing:
            lane.db.close()
            self.log.debug("%s: closed an extra connection idle for %gs or more (%d left)",
                           self.application_name, self.idle_close_after, len(self._lanes))

    def abort_stuck(self, seconds: float) -> int:
        """Close (see :meth:`DbConnection.close`) the connections of lanes busy for ``seconds``
        (monotonic) or more: a statement hung on a connection that the server's
        statement_timeout does not end (e.g. an unresponsive server) then fails with a connection
        error and can be retried on another lane. Returns how many were closed."""
        with self._cond:
            now = time.monotonic()
            stuck = [lane for lane in self._lanes if lane.busy_since is not None
                     and now - lane.busy_since >= seconds and lane.aborted != lane.busy_since]
            for lane in stuck:
                lane.aborted = lane.busy_since
        for lane in stuck:
            self.log.warning("%s: a statement has been running for %.2f s or more (its statement_timeout did "
                             "not end it: the server does not answer); closing its connection",
                             self.application_name, seconds)
            lane.db.close(wait=0.2)
        return len(stuck)

    def close(self, *, final: bool = False) -> None:
        """Close every lane's connection without waiting long for running statements (see
        :meth:`DbConnection.close`); a later statement opens the first lane again, unless
        ``final`` is True (then statements raise psycopg.InterfaceError)."""
        with self._cond:
            if final:
                self._closed = True
            lanes, self._lanes = list(self._lanes), self._lanes[:1]
            self._cond.notify_all()
        for lane in lanes:
            lane.db.close(final=final)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def check_schema(conn: psycopg.Connection) -> int:
    """Return tf_schema_version(), refusing a missing schema or a newer version.

    Raises WorkerStartupError when schema taskforge is absent and SchemaVersionError when the
    database's version is newer than :data:`taskforge.SCHEMA_VERSION`.
    """
    if not conn.execute(sql.SCHEMA_EXISTS).fetchone()[0]:
        raise WorkerStartupError("schema taskforge is not installed in this database; run `taskforge db migrate`")
    version = conn.execute(sql.SCHEMA_VERSION).fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has TaskForge SQL API version {version}, newer than version {SCHEMA_VERSION} "
            f"that this taskforge package understands; upgrade the package (refusing to start)")
    return version


@dataclass(frozen=True)
class WorkerConfig:
    """Worker settings (defaults as in docs/configuration.md). Times are seconds.

    queues:            queue names to claim from; None = every queue.
    task_types:        subset of the registered handlers to claim; None = all registered.
    concurrency:       handler slots in this process (1..1000).
    lease_seconds:     lease granted by each claim and renewal (0 < s <= 86400); renewals are
                       sent every lease_seconds / 3.
    heartbeat_seconds: tf_heartbeat interval (0 < s <= 3600).
    poll_seconds:      claim attempt interval when no notification arrives (> 0).
    grace_seconds:     after the first SIGTERM/SIGINT, how long running handlers may finish (>= 0).
    name:              worker name shown in tf_workers (default hostname-pid).
    reconnect_max_seconds: cap of the reconnect backoff (> 0).

    Derived (properties): renew_seconds = lease_seconds / 3; lock_timeout_seconds =
    min(1, lease_seconds / 10), the lock_timeout of the work and renew connections;
    statement_timeout_seconds = max(lock_timeout_seconds, min(lease_seconds / 3, 30)), their
    statement_timeout; heartbeat_lock_timeout_seconds = min(1, heartbeat_seconds / 2) and
    heartbeat_statement_timeout_seconds = max(that, min(heartbeat_seconds, 30)), those of the
    heartbeat connection.
    """

    queues: tuple[str, ...] | None = None
    task_types: tuple[str, ...] | None = None
    concurrency: int = 1
    lease_seconds: float = 30.0
    heartbeat_seconds: float = 5.0
    poll_seconds: float = 1.0
    grace_seconds: float = 30.0
    name: str | None = None
    reconnect_max_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.queues is not None:
            object.__setattr__(self, "queues", tuple(dict.fromkeys(self.queues)) or None)
            for q in self.queues or ():
                if not QUEUE_PATTERN.match(q):
                    raise ValueError(f"queue: {q!r} must match {QUEUE_PATTERN.pattern}")
        if self.task_types is not None:
            object.__setattr__(self, "task_types", tuple(dict.fromkeys(self.task_types)) or None)
        if not 1 <= self.concurrency <= 1000:
            raise ValueError(f"concurrency: must be between 1 and 1000, got {self.concurrency}")
        if not 0 < self.lease_seconds <= 86400:
            raise ValueError(f"lease_seconds: must be > 0 and <= 86400, got {self.lease_seconds}")
        if not 0 < self.heartbeat_seconds <= 3600:
            raise ValueError(f"heartbeat_seconds: must be > 0 and <= 3600, got {self.heartbeat_seconds}")
        if not 0 < self.poll_seconds <= 3600:
            raise ValueError(f"poll_seconds: must be > 0 and <= 3600, got {self.poll_seconds}")
        if not 0 <= self.grace_seconds <= 86400:
            raise ValueError(f"grace_seconds: must be >= 0 and <= 86400, got {self.grace_seconds}")
        if not 0 < self.reconnect_max_seconds <= 3600:
            raise ValueError(f"reconnect_max_seconds: must be > 0, got {self.reconnect_max_seconds}")
        if self.name is not None and not 1 <= len(self.name) <= 200:
            raise ValueError("name: must be 1 to 200 characters")

    @property
    def renew_seconds(self) -> float:
        """Interval between renewals of one lease: lease_seconds / 3."""
        return self.lease_seconds / 3.0

    @property
    def lock_timeout_seconds(self) -> float:
        """``lock_timeout`` of the work (claim, finalize) and renew connections, in seconds:
        min(1, lease_seconds / 10) (sent in whole milliseconds, at least 1 ms). A renewal that
        gives up on a row lock is retried well within the lease."""
        return min(1.0, self.lease_seconds / 10.0)

    @property
    def statement_timeout_seconds(self) -> float:
        """``statement_timeout`` of the work and renew connections, in seconds:
        max(lock_timeout_seconds, min(lease_seconds / 3, 30)) (whole milliseconds). A renewal
        sent one renew interval after the last one and hung on its connection fails after at
        most lease / 3 more, leaving a third of the lease to send it again on another connection."""
        return max(self.lock_timeout_seconds, min(self.lease_seconds / 3.0, STATEMENT_TIMEOUT_CAP_SECONDS))

    @property
    def heartbeat_lock_timeout_seconds(self) -> float:
        """``lock_timeout`` of the heartbeat connection: min(1, heartbeat_seconds / 2) seconds."""
        return min(1.0, self.heartbeat_seconds / 2.0)

    @property
    def heartbeat_statement_timeout_seconds(self) -> float:
        """``statement_timeout`` of the heartbeat connection, in seconds:
        max(heartbeat_lock_timeout_seconds, min(heartbeat_seconds, 30))."""
        return max(self.heartbeat_lock_timeout_seconds, min(self.heartbeat_seconds, STATEMENT_TIMEOUT_CAP_SECONDS))

    @property
    def lane_stuck_seconds(self) -> float:
        """After how long a busy connection counts as stuck, so that the next statement gets
        another one (see :class:`DbLanes`): min(0.1, lock_timeout_seconds / 2)."""
        return min(LANE_STUCK_SECONDS, self.lock_timeout_seconds / 2.0)

    @property
    def renewers(self) -> int:
        """Renewer threads, and at most as many renew connections: min(concurrency, 4)."""
        return min(self.concurrency, MAX_LANES)


@dataclass
class _Running:
    """A claimed attempt from claim until finalize."""

    ctx: TaskContext
    payload: Any
    claimed_at: float  # monotonic time the claim was sent
    next_renew: float  # monotonic
    renew_failures: int = 0
    finalizing: bool = False
    lease_lost: bool = False
    renewing: bool = False     # a renewer is sending tf_renew for it now
    lock_waits: int = 0        # renewals in a row that timed out on a row lock
    lock_logged_at: float = 0.0  # monotonic time such a timeout was last logged


class Worker:
    """One worker process (see the module docstring). Use :meth:`run` from the main thread."""

    def __init__(self, dsn: str | None = None, config: WorkerConfig | None = None,
                 registry: HandlerRegistry | None = None, logger: logging.Logger | None = None) -> None:
        self.dsn = resolve_dsn(dsn)
        self.config = config or WorkerConfig()
        self.registry = registry if registry is not None else _handlers.registry
        self.log = logger or log
        self.worker_id: str | None = None
        self.task_types: list[str] = []
        self.name = self.config.name or f"{socket.gethostname()}-{os.getpid()}"[:200]

        self._stopping = threading.Event()   # claim nothing new
        self._force = threading.Event()      # exit now
        self._halt = threading.Event()       # stops renewer/heartbeat/listener
        self._wake = threading.Event()       # dispatcher: a claim may succeed now
        self._dispatcher_done = threading.Event()
        self._lock = threading.Lock()
        self._renew_cond = threading.Condition(self._lock)  # renewers wait on it; guards _Running flags
        self._busy = 0
        # Keyed by (task_id, attempt_number): after losing a lease this worker may claim the next
        # attempt of the same task while the old attempt's handler still runs.
        self._running: dict[tuple[int, int], _Running] = {}
        self._slots: _queue.Queue = _queue.Queue()
        self._threads: list[threading.Thread] = []
        self._exit_code = EXIT_OK
        self._grace_deadline: float | None = None
        self._signals = 0

        cfg = self.config
        cap = cfg.reconnect_max_seconds
        # Claims and finalizes: one connection normally; more (up to concurrency + 1, at most
        # MAX_LANES) only while a statement is stuck, e.g. a finalize waiting for a row lock.
        self._work = DbLanes(self.dsn, f"{APPLICATION_NAME}/work", max_lanes=min(cfg.concurrency + 1, MAX_LANES),
                             stuck_after=cfg.lane_stuck_seconds, interrupt=self._force, backoff_cap=cap,
                             logger=self.log, lock_timeout=cfg.lock_timeout_seconds,
                             statement_timeout=cfg.statement_timeout_seconds)
        self._renew_db = DbLanes(self.dsn, f"{APPLICATION_NAME}/renew", max_lanes=cfg.renewers,
                                 stuck_after=cfg.lane_stuck_seconds, interrupt=self._halt, backoff_cap=cap,
                                 logger=self.log, lock_timeout=cfg.lock_timeout_seconds,
                                 statement_timeout=cfg.statement_timeout_seconds)
        self._heartbeat_db = DbConnection(self.dsn, f"{APPLICATION_NAME}/heartbeat", interrupt=self._halt,
                                          backoff_cap=cap, logger=self.log,
                                          lock_timeout=cfg.heartbeat_lock_timeout_seconds,
                                          statement_timeout=cfg.heartbeat_statement_timeout_seconds)

    # --- public control ------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        """Attempts claimed and not yet finalized."""
        with self._lock:
            return self._busy

    def request_stop(self) -> None:
        """Graceful stop (what the first SIGTERM/SIGINT does): claim nothing new, let handlers finish."""
        if not self._stopping.is_set():
            self._grace_deadline = time.monotonic() + self.config.grace_seconds
            self._stopping.set()
            self._wake.set()

    def force_stop(self) -> None:
        """Exit at once without finalizing (what a second signal does)."""
        self._force.set()
        self.request_stop()

    # --- startup -------------------------------------------------------------------------------

    def _start(self) -> None:
        conn = self._work.connection()  # fail fast at startup: connection errors are raised
        check_schema(conn)
        allowed = self.registry.task_types()
        if self.config.task_types:
            unknown = [t for t in self.config.task_types if t not in allowed]
            if unknown:
                raise WorkerConfigError(
                    f"task type {', '.join(unknown)}: no handler registered on this worker "
                    f"(registered: {', '.join(allowed) or 'none'}; load yours with --import)")
            self.task_types = sorted(self.config.task_types)
        else:
            self.task_types = allowed
        if not self.task_types:
            raise WorkerConfigError("no task handlers are registered")
        queues = list(self.config.queues) if self.config.queues else None
        self.worker_id = str(conn.execute(sql.REGISTER_WORKER, {
            "name": self.name, "hostname": socket.gethostname()[:255], "pid": os.getpid(),
            "queues": queues, "task_types": self.task_types,
            "heartbeat_seconds": self.config.heartbeat_seconds}).fetchone()[0])
        self.log.info("worker %s started: name=%s queues=%s task_types=%s concurrency=%d lease=%gs "
                      "renew every %gs lock_timeout=%gms statement_timeout=%gms heartbeat=%gs poll=%gs grace=%gs",
                      self.worker_id, self.name, ",".join(queues) if queues else "(all)",
                      ",".join(self.task_types), self.config.concurrency, self.config.lease_seconds,
                      self.config.renew_seconds, _milliseconds(self.config.lock_timeout_seconds),
                      _milliseconds(self.config.statement_timeout_seconds),
                      self.config.heartbeat_seconds, self.config.poll_seconds, self.config.grace_seconds)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=self._guarded(target, name), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _guarded(self, target: Callable[[], None], name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException:  # noqa: BLE001 - a dead loop must stop the worker, loudly
                self.log.exception("internal error in the %s thread; stopping the worker", name)
                self._exit_code = EXIT_ERROR
                self.request_stop()
        return run

    # --- main ----------------------------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = True, exit_process: bool = False) -> int:
        """Start, work until stopped, and return the exit code (see EXIT_* constants).

        Raises WorkerStartupError / SchemaVersionError / psycopg.Error when it cannot start.
        With ``exit_process=True`` a forced exit ends the process with ``os._exit`` (handler
        threads cannot be interrupted); otherwise run() returns and leaves them running.
        Must be called from the main thread when install_signal_handlers is True.
        """
        previous: dict[int, Any] = {}
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            try:
                self._start()
            except BaseException:
                self._work.close()
                raise
            for i in range(self.config.concurrency):
                self._spawn(self._slot_loop, f"slot-{i + 1}")
            for i in range(self.config.renewers):
                self._spawn(functools.partial(self._renew_loop, first=i == 0), f"renewer-{i + 1}")
            self._spawn(self._heartbeat_loop, "heartbeat")
            self._spawn(self._listen_loop, "listener")
            self._spawn(self._dispatch_loop, "dispatcher")
            if self._wait_until_done():
                return self._forced_exit(exit_process)
            return self._clean_exit(exit_process)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        # Runs in the main thread between two bytecodes, possibly while that thread holds
        # self._lock: read counters without taking it.
        self._signals += 1
        name = signal.Signals(signum).name
        if self._signals == 1:
            self.log.info("%s received: claiming nothing new; waiting up to %gs for %d running task(s) "
                          "(send it again to exit at once)", name, self.config.grace_seconds, self._busy)
            self.request_stop()
        else:
            self.log.warning("%s received again: exiting now", name)
            self.force_stop()

    def _wait_until_done(self) -> bool:
        """Main thread: wait for a clean stop (True when the stop has to be forced)."""
        while True:
            if self._force.is_set():
                return True
            if self._stopping.is_set() and self._dispatcher_done.is_set() and self.busy == 0:
                return False
            if self._stopping.is_set() and self._grace_deadline is not None and self.busy > 0 \
                    and time.monotonic() >= self._grace_deadline:
                self.log.warning("grace period of %gs is over", self.config.grace_seconds)
                self._force.set()  # slots stop retrying finalizes; waits on the work lanes end
                return True
            self._force.wait(0.1)

    def _stop_threads(self) -> None:
        self._halt.set()
        with self._renew_cond:
            self._renew_cond.notify_all()
        self._wake.set()
        for _ in range(self.config.concurrency):
            self._slots.put(None)

    def _clean_exit(self, exit_process: bool = False) -> int:
        """Main thread, nothing running: stop the threads, deregister, close. Every wait has a
        deadline (monotonic) and a second signal (``_force``) turns it into :meth:`_forced_exit`."""
        self._stop_threads()
        # The renewers and the heartbeat are done: interrupt a statement they may be stuck in.
        self._renew_db.close(final=True)
        self._heartbeat_db.close(final=True)
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for thread in self._threads:
            while thread.is_alive() and not self._force.is_set() and time.monotonic() < deadline:
                thread.join(timeout=0.1)
        if self._force.is_set():
            return self._forced_exit(exit_process)
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            self.log.warning("thread(s) %s did not stop within %gs; going on", ", ".join(alive), STOP_JOIN_SECONDS)
        within = _for_seconds(DEREGISTER_SECONDS)
        while True:
            try:
                self._work.execute(sql.DEREGISTER_WORKER, {"worker_id": self.worker_id},
                                   retry=lambda: within() and not self._force.is_set(), what="deregister")
                self.log.info("worker %s deregistered; exiting", self.worker_id)
                break
            except psycopg.Error as exc:
                if self._force.is_set():
                    return self._forced_exit(exit_process)
                if is_lock_timeout(exc) and within():
                    # Another transaction holds the worker's row: try again within the deadline.
                    if self._force.wait(0.2):
                        return self._forced_exit(exit_process)
                    continue
                self.log.warning("could not deregister worker %s: %s (tf_workers will show it stale)",
                                 self.worker_id, _one_line(exc))
                break
        self._work.close(final=True)
        return self._exit_code

    def _forced_exit(self, exit_process: bool) -> int:
        with self._lock:
            unfinished = sorted(f"{r.ctx.task_id}/{r.ctx.attempt_number}" for r in self._running.values())
        self.log.warning("exiting with %d unfinished attempt(s) [%s] (task/attempt); they are not finalized: "
                         "their leases expire within %gs and tf_recover requeues them",
                         len(unfinished), ", ".join(unfinished), self.config.lease_seconds)
        self._force.set()
        self._stop_threads()
        # Stop every statement still running (a finalize, a renewal, a heartbeat) and open no
        # connection again: handlers that are still running are not finalized.
        for db in (self._work, self._renew_db, self._heartbeat_db):
            db.close(final=True)
        # Best effort, on a fresh short-lived connection: the work connection may be busy.
        try:
            with psycopg.connect(self.dsn, autocommit=True, application_name=f"{APPLICATION_NAME}/exit",
                                 connect_timeout=2,
                                 options=lock_timeout_option(self.dsn, 1.0, 2.0)) as conn:
                conn.execute(sql.DEREGISTER_WORKER, {"worker_id": self.worker_id})
            self.log.info("worker %s deregistered", self.worker_id)
        except Exception as exc:  # noqa: BLE001
            self.log.warning("could not deregister worker %s: %s", self.worker_id, _one_line(exc))
        if exit_process:
            logging.shutdown()
            os._exit(EXIT_FORCED)
        return EXIT_FORCED

    # --- dispatcher ----------------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        try:
            self._dispatch()
        finally:
            self._dispatcher_done.set()

    def _dispatch(self) -> None:
        cfg = self.config
        queues = list(cfg.queues) if cfg.queues else None
        while not self._stopping.is_set():
            free = cfg.concurrency - self.busy
            if free <= 0:
                self._wake.wait(cfg.poll_seconds)
                self._wake.clear()
                continue
            self._wake.clear()
            sent_at = time.monotonic()
            try:
                rows = self._work.execute(sql.CLAIM, {
                    "worker_id": self.worker_id, "queues": queues, "lease_seconds": cfg.lease_seconds,
                    "max_tasks": min(free, 1000), "task_types": self.task_types},
                    retry=lambda: not self._stopping.is_set(), what="claim", interrupt=self._stopping)
            except psycopg.Error as exc:
                if is_lock_timeout(exc):
                    # Nothing was claimed (the statement rolled back); try again at the next poll.
                    self.log.warning("tf_claim timed out waiting for a lock (%s); claiming again in %gs",
                                     _one_line(exc), cfg.poll_seconds)
                    self._wake.wait(cfg.poll_seconds)
                    continue
                if is_transient_error(exc):
                    if self._stopping.is_set():
                        continue  # stopping while the database was unreachable
                    # Not retried by the lanes (e.g. the retry predicate raced with a stop).
                    self._wake.wait(cfg.poll_seconds)
                    continue
                if getattr(exc, "sqlstate", None) == "TF404":
                    self.log.error("tf_claim refused: %s; stopping", _one_line(exc))
                else:
                    self.log.error("tf_claim failed: %s; stopping", _one_line(exc))
                self._exit_code = EXIT_ERROR
                self.request_stop()
                return
            for task_id, attempt_number, task_type, payload, queue, priority, max_attempts, _lease in rows:
                ctx = TaskContext(task_id=task_id, attempt_number=attempt_number, task_type=task_type,
                                  queue=queue, priority=priority, max_attempts=max_attempts,
                                  worker_id=self.worker_id)
                item = _Running(ctx=ctx, payload=payload, claimed_at=sent_at,
                                next_renew=sent_at + cfg.renew_seconds)
                with self._renew_cond:
                    self._busy += 1
                    self._running[(task_id, attempt_number)] = item
                    self._renew_cond.notify_all()
                self.log.debug("claimed task %s attempt %s (%s, queue %s)", task_id, attempt_number, task_type, queue)
                self._slots.put(item)
            if len(rows) < free:
                self._wake.wait(cfg.poll_seconds)

    # --- slots ---------------------------------------------------------------------------------

    def _slot_loop(self) -> None:
        while True:
            item = self._slots.get()
            if item is None:
                return
            try:
                self._execute(item)
            finally:
                with self._lock:
                    self._running.pop((item.ctx.task_id, item.ctx.attempt_number), None)
                    self._busy -= 1
                self._wake.set()

    def _execute(self, item: _Running) -> None:
        ctx = item.ctx
        fn = self.registry.get(ctx.task_type)
        started = time.monotonic()
        if fn is None:
            outcome = Outcome("failed", error=error_json(
                type_name="taskforge.NoHandler", message=f"no handler registered for task type {ctx.task_type!r}"))
        else:
            try:
                outcome = run_handler(fn, item.payload, ctx)
            except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from a handler
                outcome = Outcome("failed", error=error_json(exc))
        self.log.debug("task %s attempt %s handler ended: %s after %.3f s", ctx.task_id, ctx.attempt_number,
                       outcome.outcome, time.monotonic() - started)
        item.finalizing = True
        self._finalize(item, outcome)

    def _finalize(self, item: _Running, outcome: Outcome) -> None:
        ctx = item.ctx
        tries = {"n": 0}
        lock_waits = {"n": 0, "logged_at": 0.0}
        backoff = Backoff(base=0.1, cap=FINALIZE_LOCK_RETRY_CAP_SECONDS)

        def retry() -> bool:
            tries["n"] += 1
            return not self._force.is_set()

        def send(out: Outcome) -> tuple:
            params = {"task_id": ctx.task_id, "worker_id": self.worker_id, "attempt_number": ctx.attempt_number,
                      "outcome": out.outcome, "result": out.result,
                      "error": None if out.error is None else json.dumps(out.error, ensure_ascii=False)}
            while True:
                try:
                    return self._work.execute(sql.FINALIZE, params, retry=retry, what="finalize")[0]
                except psycopg.Error as exc:
                    if not is_lock_timeout(exc):
                        raise
                    failure = exc
                # Another transaction holds the task's row. Nothing was written; send the same
                # call again (same worker, same attempt) after a backoff, holding no connection
                # meanwhile: claims and the other slots' finalizes go on.
                lock_waits["n"] += 1
                delay = backoff.next_delay()
                now = time.monotonic()
                if lock_waits["n"] == 1 or now - lock_waits["logged_at"] >= LOCK_LOG_EVERY_SECONDS:
                    lock_waits["logged_at"] = now
                    self.log.warning("finalize of task %s attempt %s timed out waiting for a row lock "
                                     "(lock_timeout %gs, SQLSTATE 55P03: another transaction holds the task's "
                                     "row; %d time(s) so far); sending it again in %.2f s",
                                     ctx.task_id, ctx.attempt_number, self.config.lock_timeout_seconds,
                                     lock_waits["n"], delay)
                if self._force.wait(delay):
                    raise failure  # exiting at once: leave the attempt to lease expiry

        try:
            if self._force.is_set():
                raise psycopg.OperationalError("the worker is exiting at once")
            try:
                accepted, task_state, reason = send(outcome)
            except psycopg.Error as exc:
                if is_transient_error(exc):  # includes a lock timeout at a forced exit
                    raise
                # The database refused what we sent (e.g. a result it cannot store): record the
                # attempt as failed with that explanation instead of leaving it to lease expiry.
                self.log.warning("tf_finalize refused the %s outcome of task %s attempt %s: %s; "
                                 "finalizing it as failed", outcome.outcome, ctx.task_id, ctx.attempt_number,
                                 _one_line(exc))
                accepted, task_state, reason = send(Outcome("failed", error=error_json(
                    type_name="taskforge.FinalizeRefused",
                    message=f"the database refused the {outcome.outcome} outcome: {_one_line(exc)}")))
        except psycopg.Error as exc:
            self.log.error("could not finalize task %s attempt %s: %s; its lease will expire and "
                           "tf_recover will requeue it", ctx.task_id, ctx.attempt_number, _one_line(exc))
            return
        if lock_waits["n"]:
            self.log.info("finalize of task %s attempt %s went through after %d lock timeout(s)",
                          ctx.task_id, ctx.attempt_number, lock_waits["n"])
        if accepted:
            self.log.debug("finalized task %s attempt %s: %s -> task %s", ctx.task_id, ctx.attempt_number,
                           outcome.outcome, task_state)
        elif tries["n"] and reason == "not_running":
            self.log.info("finalize of task %s attempt %s was repeated after a lost connection and is "
                          "refused (%s, task now %s): the first call was most likely applied",
                          ctx.task_id, ctx.attempt_number, reason, task_state)
        else:
            self.log.warning("tf_finalize did not accept the %s outcome of task %s attempt %s: %s "
                             "(task is %s); another attempt owns or ended it", outcome.outcome,
                             ctx.task_id, ctx.attempt_number, reason, task_state)

    # --- renewers ------------------------------------------------------------------------------

    def _open_eagerly(self, db: DbConnection | DbLanes) -> None:
        """Open a loop's connection at start so it is ready when first needed."""
        try:
            db.connection()
        except psycopg.Error as exc:
            self.log.warning("could not open the %s connection yet: %s", db.application_name, _one_line(exc))

    def _renew_loop(self, first: bool = True) -> None:
        """One of ``config.renewers`` threads. Each takes the most urgent due renewal, sends it on
        a renew lane and goes back for the next, so a renewal that waits (for a lock, a slow
        connection) ties up one thread while the others keep renewing the other tasks."""
        if first:
            self._open_eagerly(self._renew_db)
        while True:
            with self._renew_cond:
                while True:
                    if self._halt.is_set():
                        return
                    item, wait = self._next_renewal(time.monotonic())
                    if item is not None:
                        item.renewing = True
                        break
                    self._renew_cond.wait(wait)
            try:
                self._renew_one(item)
            finally:
                with self._renew_cond:
                    item.renewing = False
                    self._renew_cond.notify_all()

    def _next_renewal(self, now: float) -> tuple[_Running | None, float]:
        """Under the lock: the due renewal to send next, or None and how long to wait (s).

        Each task has its own schedule (``next_renew``, monotonic). Among the due ones, tasks
        whose last renewal did not time out on a lock come first (earliest due first), so tasks
        blocked by a row lock never crowd out the others.
        """
        candidates = [r for r in self._running.values() if not r.lease_lost and not r.renewing]
        due = [r for r in candidates if r.next_renew <= now]
        if due:
            return min(due, key=lambda r: (r.lock_waits > 0, r.next_renew)), 0.0
        if not candidates:
            return None, 1.0
        return None, min(max(min(r.next_renew for r in candidates) - now, 0.005), 1.0)

    def _renew_one(self, item: _Running) -> None:
        ctx, cfg = item.ctx, self.config
        sent_at = time.monotonic()
        try:
            rows = self._renew_db.execute(sql.RENEW, {
                "task_id": ctx.task_id, "worker_id": self.worker_id, "attempt_number": ctx.attempt_number,
                "lease_seconds": cfg.lease_seconds}, what="renew")
        except psycopg.Error as exc:
            if is_lock_timeout(exc):
                # Another transaction holds the task's row (tf_renew waits for it). Nothing
                # changed and the lease is not lost: try again soon, well within the lease.
                item.lock_waits += 1
                delay = min(cfg.lock_timeout_seconds, cfg.renew_seconds / 2) * random.uniform(0.5, 1.0)
                now = time.monotonic()
                item.next_renew = now + delay
                if item.lock_waits == 1 or now - item.lock_logged_at >= LOCK_LOG_EVERY_SECONDS:
                    item.lock_logged_at = now
                    self.log.warning("renewal of task %s attempt %s timed out waiting for a row lock "
                                     "(lock_timeout %gs, SQLSTATE 55P03: another transaction holds the task's "
                                     "row; %d time(s) in a row); the lease is not lost; retrying in %.2f s",
                                     ctx.task_id, ctx.attempt_number, cfg.lock_timeout_seconds,
                                     item.lock_waits, delay)
                return
            if self._halt.is_set():
                return  # stopping: the renewal was interrupted on purpose
            item.renew_failures += 1
            delay = min(cfg.renew_seconds, 0.25 * 2 ** (item.renew_failures - 1)) * random.uniform(0.75, 1.0)
            if is_transient_error(exc):
                # A lost connection, a read-only session during a failover (25006), a statement
                # timeout (57014), ...: nothing says the lease is lost (only renewed = false
                # does); send it again soon, on a new connection.
                self.log.warning("renewal %d of task %s attempt %s failed (transient): %s; retrying in %.2f s",
                                 item.renew_failures, ctx.task_id, ctx.attempt_number, _one_line(exc), delay)
                item.next_renew = time.monotonic() + delay
                return
            self.log.error("tf_renew refused task %s attempt %s: %s; no more renewals for it",
                           ctx.task_id, ctx.attempt_number, _one_line(exc))
            item.lease_lost = True
            ctx._set_lease_lost()
            return
        renewed, _lease_expires_at, cancel_requested = rows[0]
        if item.lock_waits:
            self.log.info("renewed task %s attempt %s after %d lock timeout(s): %s", ctx.task_id,
                          ctx.attempt_number, item.lock_waits, "renewed" if renewed else "the lease was lost")
            item.lock_waits = 0
        if cancel_requested and not ctx.cancel_requested:
            self.log.info("task %s attempt %s: cancel requested (ctx.cancel_requested is now True)",
                          ctx.task_id, ctx.attempt_number)
            ctx._set_cancel_requested()
        if renewed:
            item.renew_failures = 0
            item.next_renew = sent_at + cfg.renew_seconds
            return
        item.lease_lost = True
        if item.finalizing:
            return  # its finalize has been (or is being) sent; it reports how that ended
        ctx._set_lease_lost()
        self.log.warning("lease lost for task %s attempt %s (tf_renew returned renewed = false); "
                         "no more renewals; the handler keeps running and its result will still be "
                         "offered to tf_finalize, which decides", ctx.task_id, ctx.attempt_number)

    # --- heartbeat -----------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self.config.heartbeat_seconds
        wait = interval
        failures = 0
        # A statement hung well past its statement_timeout (an unresponsive server does not apply
        # it): its connection is closed so that it fails and is retried on another one.
        stuck_after = self.config.statement_timeout_seconds * 1.25 + 0.25
        self._open_eagerly(self._heartbeat_db)
        due = time.monotonic() + wait
        while not self._halt.wait(min(max(due - time.monotonic(), 0.0), HOUSEKEEPING_SECONDS)):
            self._work.abort_stuck(stuck_after)
            self._renew_db.abort_stuck(stuck_after)
            if time.monotonic() < due:
                continue
            # Housekeeping: close extra connections left idle after a stuck statement.
            self._work.trim()
            self._renew_db.trim()
            try:
                self._heartbeat_db.execute(sql.HEARTBEAT, {"worker_id": self.worker_id}, what="heartbeat")
                if failures:
                    self.log.info("heartbeat restored after %d failure(s)", failures)
                failures, wait = 0, interval
            except psycopg.Error as exc:
                if not is_transient_error(exc):
                    self.log.error("tf_heartbeat refused: %s; stopping", _one_line(exc))
                    self._exit_code = EXIT_ERROR
                    self.request_stop()
                    return
                failures += 1
                wait = min(interval, 0.25 * 2 ** (failures - 1)) * random.uniform(0.75, 1.0)
                self.log.warning("heartbeat failed (%d): %s; retrying in %.2f s", failures, _one_line(exc), wait)
            due = time.monotonic() + wait

    # --- listener ------------------------------------------------------------------------------

    def _listen_loop(self) -> None:
        wanted = set(self.config.queues) if self.config.queues else None
        backoff = Backoff(cap=self.config.reconnect_max_seconds)
        lost = False
        while not self._halt.is_set():
            conn = None
            try:
                conn = psycopg.connect(self.dsn, autocommit=True, application_name=f"{APPLICATION_NAME}/listen",
                                       **self._heartbeat_db._extra)
                conn.execute(sql.LISTEN)
                backoff.reset()
                if lost:
                    self.log.info("listener re-subscribed to channel taskforge on a new connection")
                    self._wake.set()  # notifications may have been missed meanwhile
                    lost = False
                while not self._halt.is_set():
                    for note in conn.notifies(timeout=0.5):
                        if wanted is None or note.payload in wanted:
                            self._wake.set()
                        if self._halt.is_set():
                            break
            except Exception as exc:  # noqa: BLE001 - any failure: resubscribe on a new connection
                if self._halt.is_set():
                    break
                lost = True
                delay = backoff.next_delay()
                self.log.warning("listener connection lost: %s; re-subscribing in %.2f s (poll every %gs meanwhile)",
                                 _one_line(exc), delay, self.config.poll_seconds)
                self._halt.wait(delay)
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001
                        pass


def _for_seconds(seconds: float) -> Callable[[], bool]:
    """A retry predicate that allows retries for ``seconds`` (monotonic clock)."""
    deadline = time.monotonic() + seconds

    def retry() -> bool:
        return time.monotonic() < deadline
    return retry
