"""The console through a database outage and a restart (what a failover looks like to it).

A private server (taskforge/private_server.py) is migrated and the console built on it; its
pool is real (psycopg_pool), and so are the outages: the server crashes (``pg_ctl stop -m
immediate``) or restarts, and ``/healthz`` is asked meanwhile.

- Down: ``/healthz`` answers 503 while the server is down (never a 500, and within the pool's
  wait), and 200 again within :data:`BACK_WITHIN_SECONDS` of the server accepting connections,
  however long the outage lasted (psycopg_pool retries a failed connection with exponential
  backoff; without a bound, its next try came as late after the server's return as the outage
  had lasted, and the console answered 503 all that while).
- Restarted under it: the connections the pool held were cut by the restart; the requests after
  it are answered 200, every one (no request is handed a dead connection).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from taskforge import database as tfdb
from taskforge.private_server import PrivateServer
from taskforge_console import Settings, create_app
from taskforge_console.db import POOL_WAIT_SECONDS
from taskforge_console.state import console

DATABASE = "taskforge_outage_test"
#: How long after the server is back /healthz may still fail (seconds).
BACK_WITHIN_SECONDS = 3.0
OUTAGE_SECONDS = 12.0


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    pg = PrivateServer()
    try:
        pg.start()
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        tfdb.migrate(pg.dsn(DATABASE))
        yield pg
    finally:
        pg.destroy()


@pytest.fixture()
def app(server: PrivateServer) -> Iterator[Any]:
    application = create_app(Settings(dsn=server.dsn(DATABASE), pool_min_size=4, pool_max_size=4))
    application.config["TESTING"] = True
    yield application
    console(application).db.close()


def healthz(client: Any) -> tuple[int, float]:
    """(status, seconds the request took)."""
    start = time.monotonic()
    status = client.get("/healthz").status_code
    return status, time.monotonic() - start


def test_healthz_is_503_while_the_server_is_down_and_200_soon_after_it_is_back(server, app):
    client = app.test_client()
    deadline = time.monotonic() + 30
    while healthz(client)[0] != 200:
        assert time.monotonic() < deadline, "the console never answered 200"
        time.sleep(0.1)

    server.stop("immediate")
    down_until = time.monotonic() + OUTAGE_SECONDS
    seen = []
    while time.monotonic() < down_until:
        status, took = healthz(client)
        seen.append(status)
        assert took < POOL_WAIT_SECONDS + 2, f"/healthz took {took:.1f} s while the server was down"
        time.sleep(0.2)
    assert set(seen) == {503}, seen

    server.start()
    back = time.monotonic()
    while True:
        status, _ = healthz(client)
        if status == 200:
            break
        assert status == 503, status
        waited = time.monotonic() - back
        assert waited < BACK_WITHIN_SECONDS, (
            f"/healthz still {status} {waited:.1f} s after the server came back (outage {OUTAGE_SECONDS} s)"
        )
        time.sleep(0.1)
    statuses = [healthz(client)[0] for _ in range(20)]
    assert statuses == [200] * 20, statuses


def test_every_request_after_a_restart_gets_a_live_connection(server, app):
    client = app.test_client()
    pool = console(app).db.pool
    deadline = time.monotonic() + 30
    while pool.get_stats().get("pool_available", 0) < 4 or healthz(client)[0] != 200:
        assert time.monotonic() < deadline, f"the pool never filled: {pool.get_stats()}"
        time.sleep(0.1)

    server.restart("fast")  # every pooled connection is cut
    statuses = [healthz(client)[0] for _ in range(8)]
    assert statuses == [200] * 8, statuses
