"""What every Python test shares beyond the database fixtures of the root conftest.py.

The folders say what a test needs, and each test gets the marker of its folder
(``pytest -m unit`` runs the tests that need no database):

* ``unit/``      no database, no long-running process
* ``sql/``       a database; no process started (SQL API through psycopg, in-process workers)
* ``cli/``       a database; the command line in-process (CliRunner) or as ``python -m taskforge.cli``
* ``processes/`` real worker, scheduler, demo and benchmark processes, real signals
* ``docs/``      README.md and docs/ run as written
* ``console/``   the web console: test client, schemathesis, ``taskforge console`` processes, the browser
* ``contrib/``   framework integrations: a Django 6 project in a Python 3.12+ virtualenv, real processes
* ``chaos/``     faults injected into real processes and a private server (``make chaos``; the
                 marker ``chaos`` is deselected by default, see pyproject.toml)
* ``ha/``        failover of a Patroni cluster of the test's own under load (``make ha``; the
                 marker ``ha`` is deselected by default too)
* ``helpers/``   modules the tests import by bare name (on pytest's ``pythonpath``)
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

from sqlcore_helpers import unique_name

TESTS = Path(__file__).resolve().parent

#: Test folders and their markers (registered in pyproject.toml).
KINDS = ("unit", "sql", "cli", "processes", "docs", "console", "contrib", "chaos", "ha")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            kind = item.path.relative_to(TESTS).parts[0]
        except ValueError:  # db/tests (pgTAP files)
            continue
        if kind in KINDS:
            item.add_marker(kind)


@pytest.fixture()
def queue() -> str:
    """A queue name no other test uses."""
    return f"it_{uuid.uuid4().hex[:12]}"


@pytest.fixture()
def login_role(admin_dsn):
    """Factory: create a LOGIN role (NOSUPERUSER NOCREATEROLE NOCREATEDB) in the given group roles
    and return its name. Every role made is dropped after the test (ask for this fixture before
    ``fresh_database`` so that the databases, which may hold grants to the role, go first)."""
    made: list[str] = []

    def make(*groups: str) -> str:
        name = unique_name("tf_test_login")
        with psycopg.connect(admin_dsn, autocommit=True) as c:
            c.execute(f'CREATE ROLE "{name}" LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB')
            made.append(name)
            for group in groups:
                c.execute(f'GRANT "{group}" TO "{name}"')
        return name

    yield make
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        for name in made:
            c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (name,))
            c.execute(f'DROP ROLE IF EXISTS "{name}"')
