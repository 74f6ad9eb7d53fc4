"""Fixtures of the Django tests (tests/contrib): the virtualenv and the example project on a
fresh database (django_site.py says how)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from django_site import Shop, django_python_path, prepare_database


@pytest.fixture(scope="session")
def django_python() -> Path:
    """The interpreter of the Django virtualenv, made on first use."""
    return django_python_path()


@pytest.fixture()
def shop(fresh_database, django_python, tmp_path) -> Iterator[Shop]:
    """The example project on a fresh database, set up as docs/django.md says and migrated
    (``manage.py migrate``); no process is started yet."""
    dsn = fresh_database("taskforge_django")
    prepare_database(dsn)
    site = Shop(django_python, dsn, tmp_path)
    migrated = site.manage("migrate", "--no-input")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    try:
        yield site
    finally:
        site.shutdown()
