"""Database connections of the worker (and scheduler): errors, backoff, one reconnecting connection.

:class:`DbConnection` is one autocommit connection that reopens itself after a failure, with
TCP keepalives, ``lock_timeout``/``statement_timeout`` set at connect time (after
``$PGOPTIONS`` and the DSN's own options, which are kept) or, behind a transaction-mode pooler,
in the transaction of each statement (:mod:`taskforge.pooling`), and
:meth:`DbConnection.abort_stuck` for a statement the server no longer answers. Times are
seconds on the monotonic clock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ExecStatus
from psycopg.rows import RowFactory

from .. import pooling

__all__ = [
    "CONNECTION_GONE",
    "KEEPALIVES",
    "Backoff",
    "DbConnection",
    "close_quietly",
    "is_connection_loss",
    "is_lock_timeout",
    "is_transient_error",
    "one_line",
]

log = logging.getLogger("taskforge.worker")

#: TCP keepalives so a silently vanished server is noticed (applied unless the DSN sets them).
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
#: How long (seconds) closing a connection waits for a statement running on it to end after
#: cancelling it, before it shuts the socket down.
CLOSE_WAIT_SECONDS = 1.0
#: SQLSTATE classes of errors that are the caller's fault and are not retried: syntax error or
#: access rule violation, data exception, integrity constraint violation (the API's own
#: refusals, SQLSTATE TFxxx, are not retried either).
PERMANENT_SQLSTATE_CLASSES = frozenset({"42", "22", "23"})


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


def is_connection_loss(exc: BaseException) -> bool:
    """True when the connection broke without the server reporting an error for the statement
    (no SQLSTATE, or InterfaceError): the statement may or may not have committed. An error the
    server did report (a statement timeout, 25006 during a failover, ...) means it rolled back."""
    if isinstance(exc, psycopg.InterfaceError):
        return True
    return isinstance(exc, psycopg.OperationalError) and not getattr(exc, "sqlstate", None)


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
        delay = min(self.cap, self.base * (2.0 ** min(self.failures, 30)))
        self.failures += 1
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


class DbConnection:
    """One autocommit connection that reopens itself after a failure.

    ``execute`` sends one statement and returns all rows. Transient errors (see
    :func:`is_transient_error`: lost connections, 25006 read-only, 57014 statement timeout, ...)
    close the connection; if ``retry`` returns True the statement is sent again on a new
    connection after a backoff wait, else the error is raised. A lock timeout
    (:func:`is_lock_timeout`) is raised at once and keeps the connection; permanent errors (TF400,
    TF404, classes 42/22/23) are raised at once. ``lock_timeout`` and ``statement_timeout``
    (seconds, None = the server's setting) are set on every connection opened, together with
    ``$PGOPTIONS`` and the DSN's options (:func:`taskforge.pooling.startup_options`); with
    ``pooler="transaction"`` (a PgBouncer in transaction mode) nothing is prepared and the two
    timeouts are set in each statement's own transaction instead (BEGIN, ``SET LOCAL`` through
    :data:`taskforge.pooling.PER_TRANSACTION_SETTINGS`, the statement, COMMIT). ``notice_handler`` is
    added to every connection opened (psycopg drops the server's notices and warnings
    otherwise). Thread-safe (one statement at a time); :meth:`close` never waits for a running
    statement for long.
    """

    def __init__(
        self,
        dsn: str,
        application_name: str,
        *,
        interrupt: threading.Event | None = None,
        connect_timeout: float = 5,
        backoff_cap: float = 5.0,
        logger: logging.Logger = log,
        lock_timeout: float | None = None,
        statement_timeout: float | None = None,
        pooler: str = pooling.NONE,
        notice_handler: Callable[[psycopg.errors.Diagnostic], None] | None = None,
    ) -> None:
        self.dsn = dsn
        self.pooler = pooler
        self.notice_handler = notice_handler
        self.application_name = application_name
        self.interrupt = interrupt or threading.Event()
        self.connect_timeout = connect_timeout
        self.backoff = Backoff(cap=backoff_cap)
        self.log = logger
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()
        self._lost = False
        self._shut = False
        params = conninfo_to_dict(dsn)
        self._extra: dict[str, Any] = {k: v for k, v in KEEPALIVES.items() if k not in params}
        if "connect_timeout" not in params:
            self._extra["connect_timeout"] = max(1, int(connect_timeout))
        self.lock_timeout = lock_timeout
        self.statement_timeout = statement_timeout
        self._pooled = pooling.connect_kwargs(pooler)  # what the pooler mode adds to any connection
        self._options: dict[str, Any] = {
            **pooling.startup_options(dsn, pooler, lock_timeout, statement_timeout),
            **self._pooled,
        }
        self._settings = pooling.transaction_settings(pooler, lock_timeout, statement_timeout)
        self._busy_since: float | None = None  # monotonic start of the running statement
        self._aborted: float | None = None  # _busy_since of the statement abort_stuck closed

    @property
    def connect_kwargs(self) -> dict[str, Any]:
        """The keyword arguments (keepalives, connect_timeout and, behind a transaction-mode
        pooler, ``prepare_threshold``) this connection adds to the DSN, for another connection of
        the same process that should behave alike (the listener, the pools of ctx.transaction())."""
        return {**self._extra, **self._pooled}

    def connection(self) -> psycopg.Connection[Any]:
        """The open connection, opening one if needed (raises psycopg.OperationalError, or
        psycopg.InterfaceError after :meth:`close` with ``final=True``)."""
        with self._lock:
            if self._shut:
                raise psycopg.InterfaceError(f"the {self.application_name} connection is closed for good")
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(
                    self.dsn, autocommit=True, application_name=self.application_name, **self._extra, **self._options
                )
                if self.notice_handler is not None:
                    self._conn.add_notice_handler(self.notice_handler)
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
            close_quietly(conn)
            return
        conn = self._conn  # a statement is running on it now
        if conn is not None:
            # In a thread of its own: without libpq 17 a cancel request cannot be given a timeout.
            canceller = threading.Thread(
                target=_cancel_quietly, args=(conn, wait), daemon=True, name=f"cancel {self.application_name}"
            )
            canceller.start()
            canceller.join(wait)
        if self._lock.acquire(timeout=wait):
            try:
                conn, self._conn = self._conn, None
            finally:
                self._lock.release()
            close_quietly(conn)
            return
        conn = self._conn
        if conn is not None:
            _shutdown_socket(conn)

    def execute(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        retry: Callable[[BaseException], bool] | None = None,
        what: str = "statement",
        row_factory: RowFactory[Any] | None = None,
    ) -> list[Any]:
        """Run one statement and return its rows: tuples, or what ``row_factory`` makes of them
        (a psycopg row factory); see the class docstring for retries.

        ``retry(exc)`` is asked, with the transient error, whether to send the statement again."""
        while True:
            with self._lock:
                try:
                    conn = self.connection()
                    self._busy_since = time.monotonic()
                    if self._settings is None:
                        cur = conn.execute(query, params)
                    else:  # the settings last as long as the statement's transaction
                        with conn.transaction():
                            conn.execute(pooling.PER_TRANSACTION_SETTINGS, self._settings)
                            cur = conn.execute(query, params)
                    result = cur.pgresult
                    if result is None or result.status != ExecStatus.TUPLES_OK:
                        return []
                    if row_factory is not None:
                        cur.row_factory = row_factory
                    return cur.fetchall()
                except Exception as exc:
                    if is_lock_timeout(exc) or not is_transient_error(exc):
                        raise
                    self.close()
                    self._lost = True
                    failure = exc
                finally:
                    self._busy_since = None
            if self._shut or retry is None or not retry(failure):
                raise failure
            delay = self.backoff.next_delay()
            self.log.warning(
                "%s failed: connection lost or refused, or transient error (%s): %s; retrying in %.2f s",
                what,
                self.application_name,
                one_line(failure),
                delay,
            )
            if self.interrupt.wait(delay):
                raise failure  # interrupted (the process is exiting): give up

    def abort_stuck(self, seconds: float) -> bool:
        """Close the connection (see :meth:`close`) if one statement has been running on it for
        ``seconds`` (monotonic) or more: a statement hung on a server that no longer answers (its
        statement_timeout does not end it) then fails with a connection error and is retried on
        a new connection. Returns True when it closed it."""
        started = self._busy_since
        if started is None or time.monotonic() - started < seconds or self._aborted == started:
            return False
        self._aborted = started
        self.log.warning(
            "%s: a statement has been running for %.2f s or more (its statement_timeout did "
            "not end it: the server does not answer); closing its connection",
            self.application_name,
            seconds,
        )
        self.close(wait=0.2)
        return True


# What libpq and the socket layer raise for a connection that is broken or closed already.
CONNECTION_GONE: tuple[type[Exception], ...] = (psycopg.Error, OSError)


def close_quietly(conn: psycopg.Connection[Any] | None) -> None:
    """Close ``conn`` (None is fine); closing a broken connection may fail again, which is ignored."""
    if conn is not None:
        with contextlib.suppress(*CONNECTION_GONE):
            conn.close()


def _cancel_quietly(conn: psycopg.Connection[Any], timeout: float) -> None:
    with contextlib.suppress(*CONNECTION_GONE):  # the connection may be broken already
        conn.cancel_safe(timeout=timeout)


def _shutdown_socket(conn: psycopg.Connection) -> None:
    """Shut the connection's socket down (without closing the file descriptor, which libpq
    owns): a statement blocked on it in another thread fails at once with a connection error."""
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
    except CONNECTION_GONE:  # already closed
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()
