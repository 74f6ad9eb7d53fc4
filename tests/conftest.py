"""What every Python test shares beyond the database fixtures of the root conftest.py.

The folders say what a test needs, and each test gets the marker of its folder
(``pytest -m unit`` runs the tests that need no database):

* ``unit/``      no database, no long-running process
* ``sql/``       a database; no process started (SQL API through psycopg, in-process workers)
* ``cli/``       a database; the command line in-process (CliRunner) or as ``python -m taskforge.cli``
* ``processes/`` real worker, scheduler, demo and benchmark processes, real signals
* ``docs/``      README.md and docs/ run as written
* ``helpers/``   modules the tests import by bare name (on pytest's ``pythonpath``)
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Test folders and their markers (registered in pyproject.toml).
KINDS = ("unit", "sql", "cli", "processes", "docs")


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
