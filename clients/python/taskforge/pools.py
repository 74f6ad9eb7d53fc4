"""Connection pools that come back by themselves after an outage: the one home of that rule.

The console's pools and the worker's ``ctx.transaction()`` pools are ``psycopg_pool`` pools
made by :func:`recovering_pool` (sync) and :func:`recovering_async_pool` (asyncio). Two settings
differ from psycopg_pool's defaults, both for a server restart, a crash or a failover:

- ``check``: a connection is checked with one empty query when it is taken from the pool, so a
  connection the outage cut is replaced before use instead of failing the request it was
  handed to. The first one found cut has every other idle connection checked at once
  (``pool.check()``, which replaces the cut ones): psycopg_pool would otherwise find them one
  by one, each after the backoff of the previous reconnect (1, 2, 4 ... s), and a request met
  by a few cut connections ran out of its wait although the server was back.
- ``reconnect_timeout`` = ``timeout``: psycopg_pool retries a failed connection attempt with
  exponential backoff (1, 2, 4, 8 ... s) for ``reconnect_timeout`` (300 s by default), so after
  a long outage its next try came about as long after the server was back as the outage had
  lasted, and every request failed meanwhile. Bounded by the request's own wait, a failing try
  is given up after ``timeout`` seconds and the next request starts a new one at once.

Times are seconds on the monotonic clock (psycopg_pool's).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["recovering_async_pool", "recovering_pool"]


def recovering_pool(dsn: str, *, timeout: float, **options: Any) -> ConnectionPool[psycopg.Connection[Any]]:
    """A closed ``ConnectionPool`` on ``dsn`` (open it with ``pool.open()``) whose requests wait
    at most ``timeout`` seconds for a connection, with the outage settings of the module
    docstring. ``options``: the other keyword arguments of ``ConnectionPool`` (``min_size``,
    ``max_size``, ``kwargs``, ``configure``, ``name`` ...), not ``check``, ``open``,
    ``timeout`` or ``reconnect_timeout``."""
    pools: list[ConnectionPool[psycopg.Connection[Any]]] = []

    def check(conn: psycopg.Connection[Any]) -> None:
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            pools[0].check()  # the other idle connections were most likely cut too
            raise

    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        dsn, check=check, open=False, timeout=timeout, reconnect_timeout=timeout, **options
    )
    pools.append(pool)
    return pool


def recovering_async_pool(
    dsn: str, *, timeout: float, **options: Any
) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
    """:func:`recovering_pool` for asyncio: a closed ``AsyncConnectionPool`` (open it with
    ``await pool.open()`` on the event loop that will use it)."""
    pools: list[AsyncConnectionPool[psycopg.AsyncConnection[Any]]] = []

    async def check(conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            await pools[0].check()  # the other idle connections were most likely cut too
            raise

    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        dsn, check=check, open=False, timeout=timeout, reconnect_timeout=timeout, **options
    )
    pools.append(pool)
    return pool
