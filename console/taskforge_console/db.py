"""The console's one connection pool and the two ways it talks to the database.

- :meth:`Database.read` runs a read under the session ``statement_timeout`` of the pool's
  connections (:attr:`Settings.statement_timeout_ms`, default 2 s; the sessions also turn JIT
  off, since every console query is short, and use ``work_mem`` 16MB). A read the database cuts
  short (SQLSTATE 57014, query_canceled) raises :class:`CutShort` and is noted on the request
  (:func:`cut_short_reads`), so the base layout shows a banner. :meth:`Database.read_or`
  returns a fallback value instead of raising.
- :meth:`Database.act` runs an action (``tf_submit``, ``tf_cancel``, ...) in one transaction
  under ``SET LOCAL statement_timeout`` = :attr:`Settings.action_timeout_ms`.
- Behind a transaction-mode pooler (:attr:`Settings.pooler`), a session keeps nothing: nothing
  is prepared, and a read runs in a transaction of its own that sets the same three settings
  with ``SET LOCAL`` (:mod:`taskforge.pooling`).

- With :attr:`Settings.read_dsn` (a hot standby), a second pool serves :meth:`Database.read` and
  :meth:`Database.read_or`; :meth:`Database.act` always uses the primary's pool (``dsn``). A
  standby that cannot be reached (no connection within :data:`REPLICA_WAIT_SECONDS`, or the
  connection lost) sends the read to the primary instead, noted on the request
  (:func:`read_fell_back`, a banner), and the standby is skipped for
  :attr:`Database.replica_retry_seconds` (monotonic clock) before one request tries it again. A
  read the standby cancels because of a conflict with recovery (SQLSTATE 40001, 40P01, 57P04:
  :data:`RECOVERY_CONFLICT_SQLSTATES`) raises :class:`CutShort` with reason
  :data:`RECOVERY_CONFLICT` (noted for its own banner, :func:`recovery_conflict_reads`).
  :meth:`Database.replica_status` tells whether the standby answers and its replay lag.

Connections are autocommit outside :meth:`act`; every statement is in :mod:`taskforge.sql`.
JSON documents are decoded by :data:`JSON_LOADS`: one nested deeper than the console shows
(:data:`MAX_JSON_DEPTH`) comes back as a labelled placeholder instead of failing the request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import psycopg
from flask import g, has_request_context
from psycopg_pool import ConnectionPool

from taskforge import pooling, sql
from taskforge.database import TolerantJsonLoads, use_tolerant_json
from taskforge.pools import recovering_pool

from .settings import Settings

__all__ = [
    "APPLICATION_NAME",
    "JSON_LOADS",
    "MAX_JSON_DEPTH",
    "RECOVERY_CONFLICT",
    "RECOVERY_CONFLICT_SQLSTATES",
    "REPLICA_APPLICATION_NAME",
    "STATEMENT_TIMEOUT",
    "CutShort",
    "Database",
    "DatabaseUnavailable",
    "ReplicaStatus",
    "cut_short_reads",
    "read_fell_back",
    "read_sources",
    "recovery_conflict_reads",
]

T = TypeVar("T")

APPLICATION_NAME = "taskforge-console"
#: application_name of the connections to the read replica (``Settings.read_dsn``).
REPLICA_APPLICATION_NAME = "taskforge-console-read"
#: Seconds a request waits for a free pooled connection (or for the first connection).
POOL_WAIT_SECONDS = 5.0
#: Seconds a read waits for a connection to the replica before it goes to the primary instead
#: (shorter than POOL_WAIT_SECONDS: the primary is there to fall back on).
REPLICA_WAIT_SECONDS = 2.0
#: Seconds the replica is skipped after it could not be reached (monotonic clock).
REPLICA_RETRY_SECONDS = 15.0
#: CutShort reasons: the console's statement_timeout, or a hot standby's conflict with recovery.
STATEMENT_TIMEOUT = "statement_timeout"
RECOVERY_CONFLICT = "recovery_conflict"
#: SQLSTATEs a hot standby cancels a query (or ends its session) with on a conflict with
#: recovery: 40001 serialization_failure (snapshot, lock, tablespace, buffer pin conflicts),
#: 40P01 deadlock_detected (a buffer-pin deadlock with the startup process), 57P04
#: database_dropped (the database was dropped on the primary).
RECOVERY_CONFLICT_SQLSTATES = frozenset({"40001", "40P01", "57P04"})
#: Deepest JSON document the console shows: the API's encoder (pydantic) stops near 255 levels
#: with "Maximum serialization depth exceeded". tf_submit and tf_finalize accept at most 100; a
#: deeper document can only have been written by a table owner.
MAX_JSON_DEPTH = 200
#: The JSON loader of the pool's connections: a placeholder for a document nested deeper than
#: MAX_JSON_DEPTH or than Python's json module decodes.
JSON_LOADS = TolerantJsonLoads(MAX_JSON_DEPTH, ", more than the console shows")


class CutShort(Exception):
    """A console read was cancelled: by ``statement_timeout`` (SQLSTATE 57014, ``reason``
    :data:`STATEMENT_TIMEOUT`) or, on the read replica, by a conflict with recovery
    (:data:`RECOVERY_CONFLICT_SQLSTATES`, ``reason`` :data:`RECOVERY_CONFLICT`).

    ``what`` says which read it was (for the banner), ``timeout_ms`` the limit in force."""

    def __init__(self, what: str, timeout_ms: int, reason: str = STATEMENT_TIMEOUT):
        if reason == RECOVERY_CONFLICT:
            message = f"{what}: cancelled by the read replica (conflict with recovery)"
        else:
            message = f"{what}: cut short by statement_timeout after {timeout_ms} ms"
        super().__init__(message)
        self.what = what
        self.timeout_ms = timeout_ms
        self.reason = reason


class DatabaseUnavailable(Exception):
    """No connection could be had within :data:`POOL_WAIT_SECONDS` (server down, pool exhausted)."""


@dataclass(frozen=True)
class ReplicaStatus:
    """What :meth:`Database.replica_status` found on the read replica.

    - ``up``: it answered (``False``: unreachable, or skipped since it was; reads go to the primary).
    - ``in_recovery``: it is a standby (``pg_is_in_recovery()``); ``False`` means ``read_dsn``
      reaches a primary.
    - ``streaming``: its WAL receiver runs (it is connected to its upstream).
    - ``lag_seconds``: replay lag in seconds of the replica's clock (0 while streaming with all
      received WAL replayed; ``None`` when unknown: down, or nothing replayed yet).
    - ``lag_bytes``: WAL received but not yet replayed (bytes; ``None`` when down).
    """

    up: bool
    in_recovery: bool | None = None
    streaming: bool | None = None
    lag_seconds: float | None = None
    lag_bytes: float | None = None


def _noted(key: str) -> list[str]:
    """The list this request noted under ``key`` on ``flask.g`` (empty outside a request)."""
    return list(g.get(key, [])) if has_request_context() else []


def _note(key: str, value: str, *, once: bool = False) -> None:
    """Append ``value`` to this request's list ``key`` on ``flask.g`` (``once``: unless there)."""
    if has_request_context():
        noted = g.setdefault(key, [])
        if not (once and value in noted):
            noted.append(value)


def cut_short_reads() -> list[str]:
    """What ``statement_timeout`` cut short during this request (``CutShort.what`` values), for the banner."""
    return _noted("taskforge_cut_short")


def recovery_conflict_reads() -> list[str]:
    """What the read replica cancelled during this request (conflict with recovery), for the banner."""
    return _noted("taskforge_recovery_conflict")


def read_fell_back() -> bool:
    """True when a read of this request went to the primary because the replica could not be reached."""
    return has_request_context() and bool(g.get("taskforge_read_fell_back", False))


def _note_cut_short(what: str, reason: str = STATEMENT_TIMEOUT) -> None:
    _note("taskforge_recovery_conflict" if reason == RECOVERY_CONFLICT else "taskforge_cut_short", what)


def read_sources() -> list[str]:
    """Where this request's reads ran, in order of first use: ``"replica"`` and/or ``"primary"``."""
    return _noted("taskforge_read_sources")


def _note_source(source: str) -> None:
    _note("taskforge_read_sources", source, once=True)


def _note_fell_back() -> None:
    if has_request_context():
        g.taskforge_read_fell_back = True


def _is_recovery_conflict(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.Error) and exc.sqlstate in RECOVERY_CONFLICT_SQLSTATES


class Database:
    """The primary's ConnectionPool (:attr:`pool`, ``Settings.dsn``) and, with
    ``Settings.read_dsn``, the read replica's (:attr:`replica_pool`); opened by :meth:`open`."""

    #: Seconds the replica is skipped after it could not be reached (monotonic clock); an
    #: attribute so that a test may shorten it.
    replica_retry_seconds: float = REPLICA_RETRY_SECONDS

    def __init__(self, settings: Settings):
        self.settings = settings
        self.pool: ConnectionPool[psycopg.Connection[Any]] = self._make_pool(
            settings.dsn, APPLICATION_NAME, POOL_WAIT_SECONDS
        )
        self.replica_pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        if settings.read_dsn is not None:
            self.replica_pool = self._make_pool(settings.read_dsn, REPLICA_APPLICATION_NAME, REPLICA_WAIT_SECONDS)
        self._replica_lock = threading.Lock()
        self._replica_down_until: float | None = None  # monotonic; None = believed up
        self._replica_probing = False

    def _make_pool(self, dsn: str, name: str, timeout: float) -> ConnectionPool[psycopg.Connection[Any]]:
        """A pool whose requests wait at most ``timeout`` seconds for a connection, made to come
        back by itself after an outage (a restart, a crash, a failover: :mod:`taskforge.pools`)."""
        return recovering_pool(
            dsn,
            timeout=timeout,
            min_size=self.settings.pool_min_size,
            max_size=self.settings.pool_max_size,
            kwargs={
                "autocommit": True,
                "application_name": name,
                **pooling.connect_kwargs(self.settings.pooler),
            },
            configure=self._configure,
            name=name,
        )

    @property
    def per_transaction(self) -> bool:
        """Whether settings are made per transaction (a transaction-mode pooler) instead of per session."""
        return self.settings.pooler == pooling.TRANSACTION

    @property
    def has_replica(self) -> bool:
        """Whether reads go to a read replica (``Settings.read_dsn``) first."""
        return self.replica_pool is not None

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        use_tolerant_json(conn, JSON_LOADS)
        if not self.per_transaction:
            conn.execute(sql.CONSOLE_SESSION_SETTINGS, {"ms": str(self.settings.statement_timeout_ms), "local": False})

    def open(self) -> None:
        """Start the pools (connections are made in the background; a down server is no error here)."""
        self.pool.open(wait=False)
        if self.replica_pool is not None:
            self.replica_pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()
        if self.replica_pool is not None:
            self.replica_pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection to the primary; :class:`DatabaseUnavailable` when none
        comes within :data:`POOL_WAIT_SECONDS`."""
        with self._connection(self.pool, replica=False) as conn:
            yield conn

    @contextmanager
    def _connection(
        self, pool: ConnectionPool[psycopg.Connection[Any]], *, replica: bool
    ) -> Iterator[psycopg.Connection[Any]]:
        try:
            with pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled) or (replica and _is_recovery_conflict(exc)):
                raise
            raise DatabaseUnavailable(str(exc).strip() or type(exc).__name__) from exc

    # --- the read replica -------------------------------------------------------------------------

    def _replica_turn(self) -> bool:
        """Whether this read should try the replica: it is believed up, or it was down for
        :attr:`replica_retry_seconds` and no other request is trying it right now."""
        if self.replica_pool is None:
            return False
        with self._replica_lock:
            if self._replica_down_until is None:
                return True
            if self._replica_probing or time.monotonic() < self._replica_down_until:
                return False
            self._replica_probing = True
            return True

    def _replica_answered(self, up: bool) -> None:
        with self._replica_lock:
            self._replica_probing = False
            self._replica_down_until = None if up else time.monotonic() + self.replica_retry_seconds

    def _on_replica(self, fn: Callable[[psycopg.Connection[Any]], T]) -> tuple[bool, T | None]:
        """``(True, fn(conn))`` on a replica connection, or ``(False, None)`` when the replica
        is skipped or cannot be reached (then remembered for :attr:`replica_retry_seconds`).
        Other errors (``psycopg.Error``, CutShort) propagate: the replica did answer."""
        if not self._replica_turn():
            return False, None
        assert self.replica_pool is not None
        try:
            with self._connection(self.replica_pool, replica=True) as conn:
                result = fn(conn)
        except DatabaseUnavailable:
            self._replica_answered(False)
            return False, None
        except BaseException:
            self._replica_answered(True)
            _note_source("replica")
            raise
        self._replica_answered(True)
        _note_source("replica")
        return True, result

    def replica_status(self) -> ReplicaStatus | None:
        """The read replica's state and replay lag (:class:`ReplicaStatus`; one query on the
        replica under the read ``statement_timeout``), or ``None`` without ``read_dsn``. A
        replica that cannot be reached (or is being skipped) gives ``ReplicaStatus(up=False)``;
        a replica that cancels the query raises :class:`CutShort`."""
        if self.replica_pool is None:
            return None

        def status(conn: psycopg.Connection[Any]) -> ReplicaStatus:
            row = conn.execute(sql.CONSOLE_REPLICA_STATUS, prepare=False).fetchone()
            assert row is not None
            in_recovery, streaming, lag_seconds, lag_bytes = row
            return ReplicaStatus(
                up=True,
                in_recovery=bool(in_recovery),
                streaming=bool(streaming),
                lag_seconds=None if lag_seconds is None else float(lag_seconds),
                lag_bytes=None if lag_bytes is None else float(lag_bytes),
            )

        answered, result = self._on_replica(lambda conn: self._run_read("replica lag", conn, status, replica=True))
        return result if answered and result is not None else ReplicaStatus(up=False)

    # --- reads and actions -------------------------------------------------------------------------

    def _run_read(
        self, what: str, conn: psycopg.Connection[Any], fn: Callable[[psycopg.Connection[Any]], T], *, replica: bool
    ) -> T:
        try:
            if not self.per_transaction:
                return fn(conn)
            with conn.transaction():
                settings = {"ms": str(self.settings.statement_timeout_ms), "local": True}
                conn.execute(sql.CONSOLE_SESSION_SETTINGS, settings)
                return fn(conn)
        except psycopg.errors.QueryCanceled as exc:
            _note_cut_short(what)
            raise CutShort(what, self.settings.statement_timeout_ms) from exc
        except psycopg.Error as exc:
            if replica and _is_recovery_conflict(exc):
                _note_cut_short(what, RECOVERY_CONFLICT)
                raise CutShort(what, self.settings.statement_timeout_ms, RECOVERY_CONFLICT) from exc
            raise

    def read(self, what: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(conn)`` under the read ``statement_timeout``, on the read replica when one is
        configured and reachable, else on the primary (:func:`read_fell_back` then says so).
        ``what`` names the read for the banner ("task list", "queue counts"). Raises
        :class:`CutShort` on SQLSTATE 57014 (and, on the replica, on a conflict with recovery),
        :class:`DatabaseUnavailable` when the primary cannot be reached either, or the
        ``psycopg.Error`` ``fn`` raised. ``fn`` may run twice (replica lost mid-read, then the
        primary): it must only read."""
        if self.replica_pool is not None:
            answered, result = self._on_replica(lambda conn: self._run_read(what, conn, fn, replica=True))
            if answered:
                return cast(T, result)
            _note_fell_back()
        return self.read_primary(what, fn)

    def read_primary(self, what: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """:meth:`read` on the primary even when a read replica is configured: for what only the
        primary knows (vacuum's statistics of its tables, the snapshots held on it). The same
        limit and errors as :meth:`read`."""
        with self.connection() as conn:
            _note_source("primary")
            return self._run_read(what, conn, fn, replica=False)

    def read_or(self, what: str, fn: Callable[[psycopg.Connection[Any]], T], fallback: T) -> T:
        """Like :meth:`read`, but a read cut short returns ``fallback`` (the banner still shows)."""
        try:
            return self.read(what, fn)
        except CutShort:
            return fallback

    def act(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(conn)`` on the primary inside one transaction with ``statement_timeout`` =
        :attr:`Settings.action_timeout_ms` (``SET LOCAL``: it ends with the transaction).
        ``fn`` may open savepoints (``conn.transaction()``) to go on after a refused item."""
        with self.connection() as conn, conn.transaction():
            conn.execute(sql.CONSOLE_SESSION_SETTINGS, {"ms": str(self.settings.action_timeout_ms), "local": True})
            return fn(conn)
