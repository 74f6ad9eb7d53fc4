"""Test fixtures shared by the pgTAP files (db/tests) and the Python tests (tests/).

The suite needs a real PostgreSQL server. Its DSN comes from $TASKFORGE_TEST_DSN, else the
local server at 127.0.0.1:5432 as user postgres. A session creates one throwaway database
(taskforge_test_<random>), migrates it with the shipped migrations, installs pgTAP in it, and
drops it at the end. A missing server is a failure with a clear message, never a skip.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import psycopg
import pytest

from taskforge import database as tfdb

ROOT = Path(__file__).resolve().parent

DEFAULT_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"


def admin_dsn_value() -> str:
    return os.environ.get("TASKFORGE_TEST_DSN") or DEFAULT_ADMIN_DSN


def create_database(admin_dsn: str, prefix: str = "taskforge_test") -> str:
    """Create an empty database and return its name."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def admin_dsn() -> str:
    """DSN of a maintenance database on the test server (may create databases)."""
    dsn = admin_dsn_value()
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"cannot reach the test PostgreSQL server ({dsn}): {exc}\n"
            "Start PostgreSQL 15+ locally or set TASKFORGE_TEST_DSN to a server where this user may "
            "create databases.",
            pytrace=False,
        )
    return dsn


@pytest.fixture(scope="session")
def db_dsn(admin_dsn: str):
    """A freshly migrated throwaway database with pgTAP installed (DSN string)."""
    name = create_database(admin_dsn)
    dsn = tfdb.with_dbname(admin_dsn, name)
    try:
        tfdb.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            available = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'").fetchone()[0]
            if not available:
                pytest.fail(
                    "the pgTAP extension is not installed on the test server "
                    "(Debian: apt-get install postgresql-15-pgtap; `make test` does it as root)",
                    pytrace=False,
                )
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap")
        yield dsn
    finally:
        drop_database(admin_dsn, name)


@pytest.fixture(scope="session")
def pgtap_connection(db_dsn: str):
    """Overrides pytest-pgtap's connection: every pgTAP file runs against the test database."""
    with psycopg.connect(db_dsn) as conn:
        yield conn


@pytest.fixture()
def conn(db_dsn: str):
    """An autocommit connection to the test database (each statement is its own transaction)."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        yield c


@pytest.fixture()
def fresh_database(admin_dsn: str):
    """Factory: create extra empty databases (DSN strings), dropped after the test."""
    created: list[str] = []

    def make(prefix: str = "taskforge_extra") -> str:
        name = create_database(admin_dsn, prefix)
        created.append(name)
        return tfdb.with_dbname(admin_dsn, name)

    yield make
    for name in created:
        drop_database(admin_dsn, name)


@pytest.fixture(autouse=True)
def _invariants_hold(request):
    """After every test that used the shared test database, tf_invariant_violations is empty."""
    yield
    if "db_dsn" not in request.fixturenames and not request.node.nodeid.endswith(".sql"):
        return
    dsn = request.getfixturevalue("db_dsn")
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute(
            "SELECT rule, task_id, attempt_number, detail FROM taskforge.tf_invariant_violations"
        ).fetchall()
    assert rows == [], f"tf_invariant_violations is not empty after {request.node.nodeid}: {rows}"
