"""Fixtures of the console tests: apps built on the session's migrated test database,
connected as a login role that holds only ``taskforge_console`` (as docs/console.md says to
deploy it), so every test also checks that the console needs no other privilege.

- ``console_dsn``: DSN of that role on the test database.
- ``make_app(**settings)``: a console app (``taskforge_console.create_app``); its pool is closed
  after the test. ``Settings`` defaults: the console DSN, no token, no password. Its sign-in
  throttle reads ``clock`` (a ``FakeClock``: time moves only when the test says so); pass
  ``clock=...`` for another.
- ``admin``: an autocommit connection as the migrating user (to set up tasks and attempts).
- ``queue``: a queue name no other test uses, so tests never depend on what others left.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from taskforge_console import Settings, create_app
from taskforge_console.state import console

from console_support import BEARER, PASSWORD, TOKEN, FakeClock
from sqlcore_helpers import unique_name


@pytest.fixture(scope="session")
def console_dsn(db_dsn: str, admin_dsn: str) -> Iterator[str]:
    """A login role IN ROLE taskforge_console (nothing else), for the whole session."""
    role = f"tf_console_test_{secrets.token_hex(4)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN IN ROLE taskforge_console").format(pgsql.Identifier(role)))
    try:
        yield make_conninfo(db_dsn, user=role)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            # The role's sessions end with the apps' pools; drop what it owns (nothing) and it.
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def make_app(console_dsn: str, clock: FakeClock) -> Iterator[Callable[..., Any]]:
    apps: list[Any] = []

    def make(**overrides: Any) -> Any:
        values: dict[str, Any] = {"dsn": console_dsn}
        app_clock = overrides.pop("clock", clock)
        values.update(overrides)
        app = create_app(Settings(**values), clock=app_clock)
        app.config["TESTING"] = True
        apps.append(app)
        return app

    yield make
    for app in apps:
        console(app).db.close()


@pytest.fixture()
def admin(db_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture()
def queue() -> str:
    return unique_name("console")


@pytest.fixture()
def token_app(make_app: Callable[..., Any]) -> Any:
    """An app with a token and a password (the usual deployment)."""
    return make_app(token=TOKEN, password=PASSWORD)


@pytest.fixture()
def api(token_app: Any) -> Any:
    """A test client of ``token_app`` that sends the bearer token on every request."""
    client = token_app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = BEARER["Authorization"]
    return client
