"""Finalizing in the handler's own transaction: what ``ctx.transaction()`` runs on a worker.

:class:`TransactionPools` is the worker's :class:`~taskforge.context.TransactionSource`: a
``psycopg_pool.ConnectionPool`` for sync handlers and an ``AsyncConnectionPool`` on the event
loop for ``async def`` ones, each opened when a handler first asks for a transaction (a worker
whose handlers never do opens no connection and starts no pool thread). Their connections are
autocommit connections with the worker's DSN, ``$PGOPTIONS`` and TCP keepalives, no
``lock_timeout`` or ``statement_timeout`` of the worker's own (the handler's statements are its
own), made to come back by themselves after an outage (:mod:`taskforge.pools`: checked with an
empty query when taken from the pool, the other idle ones at once when one is found cut, and
reconnects bounded by the pool's wait).

:class:`AttemptTransaction` is one ``with``/``async with`` block: BEGIN on entry; at a normal
end, ``tf_finalize(task_id, worker_id, attempt_number, 'succeeded', result)`` (``sql.FINALIZE``,
the attempt's fencing token from its context) inside the transaction, then COMMIT when it was
accepted and a rollback with :class:`~taskforge.context.FinalizeNotAccepted` when the guard
refused it; any exception in the block rolls back. The verdict is recorded on the context
(``ctx.mark_transaction_verdict``): the dispatcher then sends nothing for the attempt and
reports it as it reports a finalize of its own (:mod:`.dispatch`). The lease stays renewed by
the renewer until the block ends (tf_finalize holds the task's row only from its call to the
COMMIT). An ``async with`` block's finalize and COMMIT are not cut short by a cancellation of
the coroutine (the deadline's, a cancel request's): they finish, then the cancellation is
raised. A block that cannot start because the database is out of reach (no connection within
the pool's wait, :class:`psycopg_pool.PoolTimeout`, as during a restart or a failover; a
transient error of its BEGIN) raises :class:`~taskforge.handlers.RetryableError`: nothing was
written, and the attempt is retried within its budget instead of failing the task for good.
Times: the database's clock decides (tf_finalize's guard); the pool's wait for a free
connection, :data:`POOL_WAIT_SECONDS` (``wait_seconds``), is monotonic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from .. import sql
from ..context import FinalizeNotAccepted, TaskContext, TransactionVerdict
from ..errors import refusals
from ..handlers import RetryableError, encode_result
from ..pooling import NONE, startup_options
from ..pools import recovering_async_pool, recovering_pool
from .config import APPLICATION_NAME
from .connection import is_transient_error, one_line

__all__ = ["POOL_WAIT_SECONDS", "AttemptTransaction", "TransactionPools"]

#: Longest wait (seconds, monotonic) of a handler for a free connection of the pool.
POOL_WAIT_SECONDS = 30.0

T = TypeVar("T")


def _fencing(ctx: TaskContext) -> dict[str, Any]:
    return {"task_id": ctx.task_id, "worker_id": ctx.worker_id, "attempt_number": ctx.attempt_number}


class TransactionPools:
    """The connections of ``ctx.transaction()`` (see the module docstring), at most ``size`` per
    pool. ``connect_kwargs``: keyword arguments added to every connection (keepalives,
    connect_timeout). :meth:`close` (any thread) and :meth:`aclose` (on the event loop) close
    the pools; a transaction asked for afterwards raises ``psycopg_pool.PoolClosed``."""

    def __init__(
        self,
        dsn: str,
        *,
        size: int,
        connect_kwargs: dict[str, Any] | None = None,
        logger: logging.Logger,
        wait_seconds: float = POOL_WAIT_SECONDS,
    ) -> None:
        if size < 1:
            raise ValueError(f"size: must be at least 1, got {size}")
        self.dsn = dsn
        self.size = size
        self.wait_seconds = wait_seconds
        self._log = logger
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": f"{APPLICATION_NAME}/transaction",
            **(connect_kwargs or {}),
            **startup_options(dsn, NONE),  # the handler's statements carry no timeouts of the worker
        }
        self._lock = threading.Lock()
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._apool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._alock: asyncio.Lock | None = None
        self._closed = False
        self._open: set[int] = set()  # id() of the contexts with a block open

    def transaction(self, ctx: TaskContext) -> AttemptTransaction:
        """A new block for the attempt of ``ctx`` (the :class:`~taskforge.context.TransactionSource` API)."""
        return AttemptTransaction(self, ctx)

    def sync_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        """The pool of sync handlers, opened on first use (any thread)."""
        pool = self._pool
        if pool is not None:
            return pool
        with self._lock:
            if self._pool is None:
                self._refuse_closed()
                pool = recovering_pool(
                    self.dsn,
                    timeout=self.wait_seconds,
                    min_size=0,
                    max_size=self.size,
                    kwargs=self._kwargs,
                    name=f"{APPLICATION_NAME}/transaction",
                )
                pool.open(wait=False)
                self._pool = pool
                self._log.info(
                    "opened the pool of ctx.transaction() for sync handlers (at most %d connections)", self.size
                )
            return self._pool

    async def async_pool(self) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        """The pool of ``async def`` handlers, opened on first use (the worker's event loop only)."""
        pool = self._apool
        if pool is not None:
            return pool
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            if self._apool is None:
                self._refuse_closed()
                apool = recovering_async_pool(
                    self.dsn,
                    timeout=self.wait_seconds,
                    min_size=0,
                    max_size=self.size,
                    kwargs=self._kwargs,
                    name=f"{APPLICATION_NAME}/transaction-async",
                )
                await apool.open(wait=False)
                self._apool = apool
                self._log.info(
                    "opened the pool of ctx.transaction() for async handlers (at most %d connections)", self.size
                )
            return self._apool

    def parent_results(self, ctx: TaskContext) -> dict[int, Any]:
        """The results of the parents of ``ctx``'s task (``tf_parent_results``, with the
        attempt's fencing token), on a connection of the sync pool: parent task id -> result.
        Raises :class:`~taskforge.errors.Refused` TF409 when the attempt no longer holds the
        task."""
        with refusals(), self.sync_pool().connection() as conn:
            rows = conn.execute(sql.PARENT_RESULTS, _fencing(ctx)).fetchall()
        return {int(row[0]): row[2] for row in rows}

    async def aparent_results(self, ctx: TaskContext) -> dict[int, Any]:
        """:meth:`parent_results` on a connection of the async pool (the worker's event loop)."""
        pool = await self.async_pool()
        with refusals():
            async with pool.connection() as conn:
                cur = await conn.execute(sql.PARENT_RESULTS, _fencing(ctx))
                rows = await cur.fetchall()
        return {int(row[0]): row[2] for row in rows}

    def close(self, timeout: float = 5.0) -> None:
        """Close the sync pool (its connections; one in use is closed when given back), waiting
        at most ``timeout`` seconds for its threads. No transaction can start afterwards."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=timeout)

    async def aclose(self, timeout: float = 5.0) -> None:
        """Close the pool of async handlers (on the event loop, before it stops)."""
        self._closed = True
        apool, self._apool = self._apool, None
        if apool is not None:
            await apool.close(timeout=timeout)

    def enter(self, ctx: TaskContext) -> None:
        """A block of ``ctx`` opens: RuntimeError when one is open already or the attempt was
        finalized by one."""
        if ctx.transaction_verdict is not None:
            raise RuntimeError(
                f"task {ctx.task_id} attempt {ctx.attempt_number} was already finalized by ctx.transaction() "
                f"({'committed' if ctx.committed else 'refused'}): the attempt is over"
            )
        with self._lock:
            if id(ctx) in self._open:
                raise RuntimeError("ctx.transaction() blocks cannot be nested: one is open for this attempt")
            self._open.add(id(ctx))

    def leave(self, ctx: TaskContext) -> None:
        """The block of ``ctx`` ended."""
        with self._lock:
            self._open.discard(id(ctx))

    def _refuse_closed(self) -> None:
        if self._closed:
            raise RuntimeError("the worker is stopping: ctx.transaction() can no longer open a transaction")


class AttemptTransaction:
    """One ``ctx.transaction()`` block (see the module docstring and
    :meth:`taskforge.context.TaskContext.transaction`)."""

    def __init__(self, pools: TransactionPools, ctx: TaskContext) -> None:
        self._pools = pools
        self._ctx = ctx
        self._conn: Any = None
        self._tx: Any = None
        self._pool: Any = None

    # --- sync handlers ----------------------------------------------------------------------------

    def __enter__(self) -> psycopg.Connection[Any]:
        if _on_event_loop():
            raise RuntimeError("an async def handler uses `async with ctx.transaction()`, not `with`")
        self._pools.enter(self._ctx)
        try:
            pool = self._pools.sync_pool()
            conn = _unavailable_is_retryable(pool.getconn)
            try:
                tx = conn.transaction()
                _unavailable_is_retryable(tx.__enter__)  # BEGIN
            except BaseException:
                pool.putconn(conn)
                raise
        except BaseException:
            self._pools.leave(self._ctx)
            raise
        self._pool, self._conn, self._tx = pool, conn, tx
        return conn

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        conn, tx = self._conn, self._tx
        try:
            if exc is None:
                self._finish(conn, tx)
            else:
                _rollback(tx, exc)
        finally:
            self._pool.putconn(conn)
            self._pools.leave(self._ctx)

    def _finish(self, conn: psycopg.Connection[Any], tx: Any) -> None:
        try:
            params = self._params()
            row = conn.execute(sql.FINALIZE, params).fetchone()
        except BaseException as exc:
            _rollback(tx, exc)
            _raise_retryable(exc, "tf_finalize")
            raise
        verdict = _verdict(row, params["result"])
        if not verdict.accepted:
            refused = self._refusal(verdict)
            _rollback(tx, refused)
            raise refused
        try:
            tx.__exit__(None, None, None)  # COMMIT
        except BaseException as exc:
            _raise_retryable(exc, "COMMIT")
            raise
        self._ctx.mark_transaction_verdict(verdict)

    # --- async def handlers -----------------------------------------------------------------------

    async def __aenter__(self) -> psycopg.AsyncConnection[Any]:
        self._pools.enter(self._ctx)
        try:
            pool = await self._pools.async_pool()
            conn = await _aunavailable_is_retryable(pool.getconn())
            try:
                tx = conn.transaction()
                await _aunavailable_is_retryable(tx.__aenter__())  # BEGIN
            except BaseException:
                await pool.putconn(conn)
                raise
        except BaseException:
            self._pools.leave(self._ctx)
            raise
        self._pool, self._conn, self._tx = pool, conn, tx
        return conn

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        conn, tx = self._conn, self._tx
        try:
            if exc is None:
                await _to_the_end(self._afinish(conn, tx))
            else:
                await _to_the_end(_arollback(tx, exc))
        finally:
            await _to_the_end(self._pool.putconn(conn))
            self._pools.leave(self._ctx)

    async def _afinish(self, conn: psycopg.AsyncConnection[Any], tx: Any) -> None:
        try:
            params = self._params()
            cur = await conn.execute(sql.FINALIZE, params)
            row = await cur.fetchone()
        except BaseException as exc:
            await _arollback(tx, exc)
            _raise_retryable(exc, "tf_finalize")
            raise
        verdict = _verdict(row, params["result"])
        if not verdict.accepted:
            refused = self._refusal(verdict)
            await _arollback(tx, refused)
            raise refused
        try:
            await tx.__aexit__(None, None, None)  # COMMIT
        except BaseException as exc:
            _raise_retryable(exc, "COMMIT")
            raise
        self._ctx.mark_transaction_verdict(verdict)

    # --- both -------------------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        """tf_finalize's arguments: the fencing token, ``succeeded`` and the result as JSON text
        (ResultError when it cannot be stored)."""
        ctx = self._ctx
        return {
            "task_id": ctx.task_id,
            "worker_id": ctx.worker_id,
            "attempt_number": ctx.attempt_number,
            "outcome": "succeeded",
            "result": encode_result(ctx.transaction_result),
            "error": None,
        }

    def _refusal(self, verdict: TransactionVerdict) -> FinalizeNotAccepted:
        """Record the guard's refusal on the context; the exception to raise after the rollback."""
        self._ctx.mark_transaction_verdict(verdict)
        return FinalizeNotAccepted(verdict.reason, verdict.task_state)


def _verdict(row: Any, result: str | None) -> TransactionVerdict:
    if row is None:  # tf_finalize returns one row or raises
        raise RuntimeError("tf_finalize returned no row")
    return TransactionVerdict(bool(row[0]), row[1], row[2], result)


def _raise_retryable(exc: BaseException, what: str) -> None:
    """Raise RetryableError (from ``exc``) for a transient database error of the worker's own
    statements: the attempt is then finalized as usual (``retryable``), and the guard refuses that
    outcome if a COMMIT cut off in flight did apply. Anything else: return (the caller re-raises)."""
    if is_transient_error(exc):
        raise RetryableError(
            f"ctx.transaction(): {what} failed ({one_line(exc)}); nothing committed unless a COMMIT cut off "
            "in flight applied, in which case tf_finalize refuses this outcome"
        ) from exc


def _unavailable_is_retryable(step: Callable[[], T]) -> T:
    """``step()`` (taking a connection from the pool, or its BEGIN), with the database out of
    reach made a RetryableError: a ``PoolTimeout`` (no connection within the pool's wait, as
    while the server restarts or a failover promotes a standby) or a transient error of the
    BEGIN. The block has not started, nothing was written: the attempt is retried (backoff,
    budget) instead of failing the task for good."""
    try:
        return step()
    except PoolTimeout as exc:
        raise _no_connection(exc) from exc
    except psycopg.Error as exc:
        _raise_retryable(exc, "BEGIN")
        raise


async def _aunavailable_is_retryable(step: Awaitable[T]) -> T:
    """:func:`_unavailable_is_retryable` for the async pool."""
    try:
        return await step
    except PoolTimeout as exc:
        raise _no_connection(exc) from exc
    except psycopg.Error as exc:
        _raise_retryable(exc, "BEGIN")
        raise


def _no_connection(exc: PoolTimeout) -> RetryableError:
    return RetryableError(
        f"ctx.transaction(): no database connection ({one_line(exc)}): the database is out of reach (a restart or "
        "a failover?); nothing was written"
    )


def _rollback(tx: Any, exc: BaseException) -> None:
    """Leave the psycopg transaction block with ``exc``: ROLLBACK. A connection that is broken
    already needs none (the server rolls back when it goes): that error is dropped, ``exc`` goes on."""
    with contextlib.suppress(psycopg.Error):
        tx.__exit__(type(exc), exc, exc.__traceback__)


async def _arollback(tx: Any, exc: BaseException) -> None:
    with contextlib.suppress(psycopg.Error):
        await tx.__aexit__(type(exc), exc, exc.__traceback__)


async def _to_the_end(step: Awaitable[T]) -> T:
    """Await ``step`` to its end even when the awaiting coroutine is cancelled meanwhile (a
    finalize, a COMMIT or a ROLLBACK cut off in flight would leave its fate unknown and the
    connection unusable); that cancellation is raised once the step has ended without error."""
    task = asyncio.ensure_future(step)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if task.cancelled():
                raise  # the step itself ended cancelled
            cancelled = exc  # the awaiting coroutine was: let the step finish first
            continue
        if cancelled is not None:
            raise cancelled
        return result


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
