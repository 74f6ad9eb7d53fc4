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

Connections are autocommit outside :meth:`act`; every statement is in :mod:`taskforge.sql`.
JSON documents are decoded by :data:`JSON_LOADS`: one nested deeper than the console shows
(:data:`MAX_JSON_DEPTH`) comes back as a labelled placeholder instead of failing the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from flask import g, has_request_context
from psycopg_pool import ConnectionPool

from taskforge import pooling, sql
from taskforge.database import TolerantJsonLoads, use_tolerant_json

from .settings import Settings

__all__ = [
    "APPLICATION_NAME",
    "JSON_LOADS",
    "MAX_JSON_DEPTH",
    "CutShort",
    "Database",
    "DatabaseUnavailable",
    "cut_short_reads",
]

T = TypeVar("T")

APPLICATION_NAME = "taskforge-console"
#: Seconds a request waits for a free pooled connection (or for the first connection).
POOL_WAIT_SECONDS = 5.0
#: Deepest JSON document the console shows: the API's encoder (pydantic) stops near 255 levels
#: with "Maximum serialization depth exceeded". tf_submit and tf_finalize accept at most 100; a
#: deeper document can only have been written by a table owner.
MAX_JSON_DEPTH = 200
#: The JSON loader of the pool's connections: a placeholder for a document nested deeper than
#: MAX_JSON_DEPTH or than Python's json module decodes.
JSON_LOADS = TolerantJsonLoads(MAX_JSON_DEPTH, ", more than the console shows")


class CutShort(Exception):
    """A console query was cancelled by ``statement_timeout`` (SQLSTATE 57014).

    ``what`` says which read it was (for the banner), ``timeout_ms`` the limit in force."""

    def __init__(self, what: str, timeout_ms: int):
        super().__init__(f"{what}: cut short by statement_timeout after {timeout_ms} ms")
        self.what = what
        self.timeout_ms = timeout_ms


class DatabaseUnavailable(Exception):
    """No connection could be had within :data:`POOL_WAIT_SECONDS` (server down, pool exhausted)."""


def cut_short_reads() -> list[str]:
    """What was cut short during this request (``CutShort.what`` values), for the banner."""
    if not has_request_context():
        return []
    return list(g.get("taskforge_cut_short", []))


def _note_cut_short(what: str) -> None:
    if has_request_context():
        if "taskforge_cut_short" not in g:
            g.taskforge_cut_short = []
        g.taskforge_cut_short.append(what)


class Database:
    """One psycopg_pool ConnectionPool for the whole process (opened by :meth:`open`)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            settings.dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            kwargs={
                "autocommit": True,
                "application_name": APPLICATION_NAME,
                **pooling.connect_kwargs(str(settings.pooler)),
            },
            configure=self._configure,
            open=False,
            timeout=POOL_WAIT_SECONDS,
            name=APPLICATION_NAME,
        )

    @property
    def per_transaction(self) -> bool:
        """Whether settings are made per transaction (a transaction-mode pooler) instead of per session."""
        return self.settings.pooler == pooling.TRANSACTION

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        use_tolerant_json(conn, JSON_LOADS)
        if not self.per_transaction:
            conn.execute(sql.CONSOLE_SESSION_SETTINGS, {"ms": str(self.settings.statement_timeout_ms), "local": False})

    def open(self) -> None:
        """Start the pool (connections are made in the background; a down server is no error here)."""
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection; :class:`DatabaseUnavailable` when none comes in time."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled):
                raise
            raise DatabaseUnavailable(str(exc).strip() or type(exc).__name__) from exc

    def read(self, what: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(conn)`` under the read ``statement_timeout``. ``what`` names the read for the
        banner ("task list", "queue counts"). Raises :class:`CutShort` on SQLSTATE 57014,
        :class:`DatabaseUnavailable`, or the ``psycopg.Error`` ``fn`` raised."""
        try:
            with self.connection() as conn:
                if not self.per_transaction:
                    return fn(conn)
                with conn.transaction():
                    conn.execute(
                        sql.CONSOLE_SESSION_SETTINGS, {"ms": str(self.settings.statement_timeout_ms), "local": True}
                    )
                    return fn(conn)
        except psycopg.errors.QueryCanceled as exc:
            _note_cut_short(what)
            raise CutShort(what, self.settings.statement_timeout_ms) from exc

    def read_or(self, what: str, fn: Callable[[psycopg.Connection[Any]], T], fallback: T) -> T:
        """Like :meth:`read`, but a read cut short returns ``fallback`` (the banner still shows)."""
        try:
            return self.read(what, fn)
        except CutShort:
            return fallback

    def act(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(conn)`` inside one transaction with ``statement_timeout`` =
        :attr:`Settings.action_timeout_ms` (``SET LOCAL``: it ends with the transaction).
        ``fn`` may open savepoints (``conn.transaction()``) to go on after a refused item."""
        with self.connection() as conn, conn.transaction():
            if self.per_transaction:
                conn.execute(sql.CONSOLE_SESSION_SETTINGS, {"ms": str(self.settings.action_timeout_ms), "local": True})
            else:
                conn.execute(sql.CONSOLE_SET_LOCAL_STATEMENT_TIMEOUT, {"ms": str(self.settings.action_timeout_ms)})
            return fn(conn)
