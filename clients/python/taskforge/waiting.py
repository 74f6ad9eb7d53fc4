"""Waiting for a task to end: :func:`wait` (psycopg ``Connection``) and :func:`wait_async`
(``AsyncConnection``), exported as ``taskforge.client.wait`` and ``taskforge.aio.wait``.

The protocol, for any language (docs/sql-api.md#waiting-for-a-result): a task submitted with
``notify_finished => true`` makes its terminal transition (SUCCEEDED, FAILED or CANCELLED, by
whatever path) send ``pg_notify('taskforge_finished', task_id::text)`` at commit. A waiter

1. runs ``LISTEN taskforge_finished`` (autocommit: it takes effect at once),
2. then reads the task; if it is terminal already, that is the answer,
3. else waits for a notification carrying its id, and reads again.

Listening before reading is what makes the wait race-free: a task that ends between the two
steps has its notification queued on the listening connection, never lost. The wait also re-reads
the task every ``poll_interval`` seconds whatever arrives, so it ends on time when no
notification can come: a task submitted without ``notify_finished``, a connection through a
transaction-mode pooler (which cannot LISTEN), or a notification dropped with a broken session.

Clock: the timeout is measured on this process's ``time.monotonic()``; the task's own times are
the database's. A broken connection raises ``psycopg.OperationalError`` (nothing is lost: the
task row is durable, so a new wait on a new connection reads the same answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq

from . import checks, pooling, sql
from .errors import InvalidArgument, TaskNotFound

if TYPE_CHECKING:
    from .rows import Task

__all__ = ["DEFAULT_POLL_INTERVAL", "FINISHED_CHANNEL", "wait", "wait_async"]

#: The channel of the terminal-transition notifications; the payload is the task id as text.
FINISHED_CHANNEL = "taskforge_finished"
#: Seconds between re-reads of the task while waiting (the fallback when no notification comes).
DEFAULT_POLL_INTERVAL = 1.0
_TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


class _Wait:
    """The rules of one wait, shared by the sync and async loops: argument checks, the deadline,
    how long the next wait for notifications may last, and which notification is ours."""

    def __init__(self, task_id: Any, timeout: Any, poll_interval: Any) -> None:
        if task_id is None:
            raise InvalidArgument("task_id", "must be an integer, got None")
        self.task_id: int = checks.int_arg("task_id", task_id, checks.INT8_RANGE, "bigint")
        self.timeout = self._positive("timeout", timeout)
        self.poll_interval = self._positive("poll_interval", poll_interval)
        self.payload = str(task_id)
        self.deadline = time.monotonic() + self.timeout

    @staticmethod
    def _positive(argument: str, value: Any) -> float:
        seconds = checks.finite_seconds(argument, value)
        if seconds <= 0:
            raise InvalidArgument(argument, f"must be a number of seconds above 0, got {seconds:g}")
        return seconds

    def next_slice(self) -> float:
        """Seconds to wait for notifications before the next re-read; raises ``TimeoutError``
        once the deadline has passed."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"task {self.task_id} did not finish within {self.timeout:g} s")
        return min(left, self.poll_interval)

    def is_ours(self, notify: psycopg.Notify) -> bool:
        return notify.channel == FINISHED_CHANNEL and notify.payload == self.payload

    @staticmethod
    def check_connection(conn: Any, wanted: type[psycopg.Connection[Any]] | type[psycopg.AsyncConnection[Any]]) -> None:
        """``conn`` must be a psycopg connection of the ``wanted`` class, in autocommit mode and
        outside any transaction block: LISTEN takes effect, and notifications arrive, only
        between transactions (and a REPEATABLE READ snapshot would never see the task end).
        An application's SQLAlchemy or Django handle is refused rather than taken over."""
        if not isinstance(conn, wanted):
            raise TypeError(
                f"conn: waiting needs a {wanted.__module__}.{wanted.__name__} of its own (in autocommit mode), "
                f"not a {type(conn).__name__}"
            )
        if not conn.autocommit or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            raise InvalidArgument(
                "conn",
                "must be in autocommit mode and outside a transaction block: LISTEN takes effect and "
                "notifications arrive only between transactions (connect with autocommit=True, and give "
                "the wait a connection of its own)",
            )

    @staticmethod
    def is_terminal(row: tuple[Any, ...] | None, task_id: int) -> bool:
        if row is None:
            raise TaskNotFound(task_id)
        return row[0] in _TERMINAL


def _listens(listen: bool | None) -> bool:
    """``listen``, else whether ``$TASKFORGE_POOLER`` allows LISTEN (not ``transaction``)."""
    return pooling.listens(pooling.resolve_pooler()) if listen is None else bool(listen)


def wait(
    conn: Any,
    task_id: int,
    *,
    timeout: float,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    listen: bool | None = None,
) -> Task:
    """Block until task ``task_id`` is SUCCEEDED, FAILED or CANCELLED and return it as
    :func:`taskforge.client.get_task` does (state, result or last_error, attempts).

    ``conn`` must be a ``psycopg.Connection`` in autocommit mode, outside any transaction block
    (a session inside a transaction receives no notifications): give the wait a connection of
    its own, not the application's SQLAlchemy or Django handle. ``timeout``
    and ``poll_interval`` are float seconds (> 0) on ``time.monotonic()``. Notifications of other
    tasks on the channel are consumed and ignored; the LISTEN is undone at the end unless the
    connection was listening already. ``listen=False`` only re-reads the task every
    ``poll_interval`` (for a connection through a transaction-mode pooler, where a LISTEN would
    stay behind on a server connection lent to others); None: False when ``$TASKFORGE_POOLER``
    is ``transaction``, else True.

    Raises ``TimeoutError`` when the task is not terminal within ``timeout``,
    :class:`taskforge.errors.TaskNotFound` for an unknown id, :class:`InvalidArgument` for a bad
    argument or a connection not in autocommit mode or inside a transaction block, ``TypeError``
    for anything but a psycopg ``Connection``, ``psycopg.OperationalError`` when the connection
    breaks.
    """
    from . import client

    plan = _Wait(task_id, timeout, poll_interval)
    plan.check_connection(conn, psycopg.Connection)
    raw: psycopg.Connection[Any] = conn
    if not _listens(listen):
        while not plan.is_terminal(raw.execute(sql.TASK_STATE, {"task_id": task_id}).fetchone(), task_id):
            time.sleep(plan.next_slice())
        return client.get_task(raw, task_id)
    was_listening = bool(sql.one_value(raw, sql.LISTENING_FINISHED))
    raw.execute(sql.LISTEN_FINISHED)
    try:
        while not plan.is_terminal(raw.execute(sql.TASK_STATE, {"task_id": task_id}).fetchone(), task_id):
            with contextlib.closing(raw.notifies(timeout=plan.next_slice())) as notifies:
                for notify in notifies:
                    if plan.is_ours(notify):
                        break
        return client.get_task(raw, task_id)
    finally:
        if not was_listening and not raw.closed and not raw.broken:
            raw.execute(sql.UNLISTEN_FINISHED)


async def wait_async(
    conn: Any,
    task_id: int,
    *,
    timeout: float,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    listen: bool | None = None,
) -> Task:
    """:func:`wait` for a psycopg ``AsyncConnection`` (autocommit, outside a transaction block),
    returning as :func:`taskforge.aio.get_task`; the same arguments (``listen`` included), rules
    and errors. Waiting never blocks the event loop; cancelling the awaiting task cancels the wait."""
    from . import aio

    plan = _Wait(task_id, timeout, poll_interval)
    plan.check_connection(conn, psycopg.AsyncConnection)
    raw: psycopg.AsyncConnection[Any] = conn
    if not _listens(listen):
        while not plan.is_terminal(await (await raw.execute(sql.TASK_STATE, {"task_id": task_id})).fetchone(), task_id):
            await asyncio.sleep(plan.next_slice())
        return await aio.get_task(raw, task_id)
    was_listening = bool((await (await raw.execute(sql.LISTENING_FINISHED)).fetchone() or (False,))[0])
    await raw.execute(sql.LISTEN_FINISHED)
    try:
        while not plan.is_terminal(await (await raw.execute(sql.TASK_STATE, {"task_id": task_id})).fetchone(), task_id):
            async with contextlib.aclosing(raw.notifies(timeout=plan.next_slice())) as notifies:
                async for notify in notifies:
                    if plan.is_ours(notify):
                        break
        return await aio.get_task(raw, task_id)
    finally:
        if not was_listening and not raw.closed and not raw.broken:
            await raw.execute(sql.UNLISTEN_FINISHED)
