"""Test fixtures shared by the pgTAP files (db/tests) and the Python tests (tests/).

The suite needs a real PostgreSQL server: $TASKFORGE_TEST_DSN, else the local server
($TASKFORGE_TEST_LOCAL_DSN, default 127.0.0.1:5432 as user postgres), else one it starts for the
session (a container through testcontainers when Docker answers, else the embedded PostgreSQL):
see tests/helpers/suite_server.py. A session creates one throwaway database
(taskforge_test_<random>), migrates it with the shipped migrations, loads pgTAP in it, and drops
it at the end. A server that cannot be had is a failure with a clear message, never a skip.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import psycopg
import pytest

from taskforge import database as tfdb

from suite_server import NoServer, choose_server, install_pgtap

ROOT = Path(__file__).resolve().parent
#: TASKFORGE_TEST_LAYOUT=partitioned runs the session on the partitioned history
#: (taskforge.tf_partition_history right after the migration; `make test-partitioned`): small
#: ranges, so the tests' tasks spread over several of them, and enough made ahead that no test
#: needs a scheduler to make more.
PARTITIONED = os.environ.get("TASKFORGE_TEST_LAYOUT", "default") == "partitioned"
PARTITION_TASKS = 20000
PARTITIONS_AHEAD = 4
#: What the session ran against, for the summary at the end.
SERVER_REPORT: list[str] = []


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
def admin_dsn():
    """DSN of a maintenance database on the test server (may create databases and roles)."""
    try:
        server = choose_server()
    except NoServer as exc:
        pytest.fail(
            f"{exc}\nStart PostgreSQL 15+ locally, set TASKFORGE_TEST_DSN to a server where this user may "
            "create databases, or install the pgserver package (make install does) for an embedded one.",
            pytrace=False,
        )
    SERVER_REPORT.append(f"test server: {server.description}")
    try:
        yield server.admin_dsn
    finally:
        server.stop()


@pytest.fixture(scope="session")
def db_dsn(admin_dsn: str):
    """A freshly migrated throwaway database with pgTAP loaded (DSN string)."""
    name = create_database(admin_dsn)
    dsn = tfdb.with_dbname(admin_dsn, name)
    try:
        tfdb.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            if PARTITIONED:
                conn.execute("SELECT taskforge.tf_partition_history(%s, %s)", (PARTITION_TASKS, PARTITIONS_AHEAD))
                SERVER_REPORT.append(
                    f"layout: partitioned history, {PARTITION_TASKS} task ids per range, {PARTITIONS_AHEAD} ahead"
                )
            try:
                SERVER_REPORT.append(f"pgTAP: {install_pgtap(conn)}")
            except NoServer as exc:
                pytest.fail(str(exc), pytrace=False)
        yield dsn
    finally:
        drop_database(admin_dsn, name)


#: What is the default layout's alone, left out of a partitioned session (node id prefixes): its
#: catalog (one tasks table with its triggers and storage parameters), and row-wise retention,
#: which the partitioned layout replaces with drops of whole ranges
#: (tests/sql/test_partitioned_history.py tests those, on every run).
DEFAULT_LAYOUT_ONLY = (
    "db/tests/catalog/test_autovacuum.sql",
    "db/tests/catalog/test_table_privileges.sql",
    "db/tests/catalog/test_triggers.sql",
    "db/tests/tf_prune/",
    "db/tests/tf_prune_workers/test_deleted.sql",
    "tests/sql/test_plans.py::test_prune_plans",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not PARTITIONED:
        return
    skip = pytest.mark.skip(reason="the default layout's alone (catalog, row-wise retention)")
    for item in items:
        if item.nodeid.startswith(DEFAULT_LAYOUT_ONLY):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter) -> None:
    for line in SERVER_REPORT:
        terminalreporter.write_line(line)


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
