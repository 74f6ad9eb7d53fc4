"""taskforge.pools through a real outage: the pools of the console and of ``ctx.transaction()``.

A private server (taskforge.private_server) is restarted under a filled pool (every pooled
connection is cut) and stopped for longer than psycopg_pool's default backoff would cover, then
started again. What a pool made by :func:`taskforge.pools.recovering_pool` (and its asyncio twin)
must do: hand out a live connection on every request after a restart (never a cut one, and
without running out of its wait: with psycopg_pool's plain check, the cut connections are found
one at a time, each after a reconnect backoff, and the requests time out), and answer again
within :data:`BACK_WITHIN_SECONDS` of the server's return after a long outage. Found by ``make
ha``: the console's ``/healthz`` stayed 503 after a failover although the new primary was up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from taskforge.pools import recovering_async_pool, recovering_pool
from taskforge.private_server import PrivateServer

SIZE = 4
WAIT_SECONDS = 2.0
#: How long after the server is back a request may still fail (seconds).
BACK_WITHIN_SECONDS = 3.0
OUTAGE_SECONDS = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    pg = PrivateServer()
    try:
        pg.start()
        yield pg
    finally:
        pg.destroy()


def test_sync_pool_hands_out_live_connections_after_a_restart_and_returns_soon_after_an_outage(server):
    pool = recovering_pool(
        server.dsn(), timeout=WAIT_SECONDS, min_size=SIZE, max_size=SIZE, kwargs={"autocommit": True}
    )
    pool.open(wait=True)
    try:
        conns = [pool.getconn() for _ in range(SIZE)]  # every connection at once: distinct backends
        assert len({c.info.backend_pid for c in conns}) == SIZE
        for conn in conns:
            pool.putconn(conn)

        server.restart("fast")  # every pooled connection is cut
        for _ in range(2 * SIZE):
            with pool.connection() as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)

        server.stop("immediate")
        down_until = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < down_until:
            with pytest.raises((PoolTimeout, psycopg.OperationalError)), pool.connection() as conn:
                conn.execute("SELECT 1")
            time.sleep(0.2)
        server.start()
        back = time.monotonic()
        while True:
            try:
                with pool.connection() as conn:
                    conn.execute("SELECT 1")
                break
            except (PoolTimeout, psycopg.OperationalError):
                waited = time.monotonic() - back
                assert waited < BACK_WITHIN_SECONDS, f"no connection {waited:.1f} s after the server came back"
                time.sleep(0.1)
    finally:
        pool.close()


def test_async_pool_hands_out_live_connections_after_a_restart_and_returns_soon_after_an_outage(server):
    async def scenario() -> None:
        pool = recovering_async_pool(
            server.dsn(), timeout=WAIT_SECONDS, min_size=SIZE, max_size=SIZE, kwargs={"autocommit": True}
        )
        await pool.open(wait=True)
        try:
            conns = [await pool.getconn() for _ in range(SIZE)]
            assert len({c.info.backend_pid for c in conns}) == SIZE
            for conn in conns:
                await pool.putconn(conn)

            await asyncio.to_thread(server.restart, "fast")
            for _ in range(2 * SIZE):
                async with pool.connection() as conn:
                    assert await (await conn.execute("SELECT 1")).fetchone() == (1,)

            await asyncio.to_thread(server.stop, "immediate")
            await asyncio.sleep(OUTAGE_SECONDS)
            await asyncio.to_thread(server.start)
            back = time.monotonic()
            while True:
                try:
                    async with pool.connection() as conn:
                        await conn.execute("SELECT 1")
                    break
                except (PoolTimeout, psycopg.OperationalError):
                    waited = time.monotonic() - back
                    assert waited < BACK_WITHIN_SECONDS, f"no connection {waited:.1f} s after the server came back"
                    await asyncio.sleep(0.1)
        finally:
            await pool.close()

    asyncio.run(scenario())
