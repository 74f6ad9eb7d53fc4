"""Throwaway benchmark databases and the ``bench/`` data folder (pgbench scripts, peer app)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql as pgsql

from .. import database as db
from . import statements

__all__ = ["DEFAULT_ADMIN_DSN", "admin_dsn_default", "bench_dir", "fresh_database"]

DEFAULT_ADMIN_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
#: Prefix of every database the harness creates (and drops).
DATABASE_PREFIX = "taskforge_bench"


def admin_dsn_default() -> str:
    """$TASKFORGE_BENCH_DSN, else the local server as user postgres."""
    return os.environ.get("TASKFORGE_BENCH_DSN") or DEFAULT_ADMIN_DSN


def bench_dir() -> Path:
    """Return the ``bench/`` folder: inside the installed package, else the source checkout
    (located the same way as :func:`taskforge.dbsource.db_dir`)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "bench"
    if (packaged / "pgbench").is_dir():
        return packaged
    checkout = package.parents[2] / "bench"
    if (checkout / "pgbench").is_dir():
        return checkout
    raise FileNotFoundError("taskforge: cannot find the bench/ folder (neither packaged nor in a checkout)")


@contextlib.contextmanager
def fresh_database(admin_dsn: str, migrate: bool = True) -> Iterator[str]:
    """Create ``taskforge_bench_<hex>``, migrate it (unless ``migrate`` is False), yield its DSN,
    and drop it afterwards, also when the body fails or is interrupted (Ctrl-C)."""
    name = f"{DATABASE_PREFIX}_{secrets.token_hex(4)}"
    ident = pgsql.Identifier(name)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(pgsql.SQL(statements.BENCH_CREATE_DATABASE).format(name=ident))
    try:
        dsn = db.with_dbname(admin_dsn, name)
        if migrate:
            db.migrate(dsn)
        yield dsn
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(pgsql.SQL(statements.BENCH_DROP_DATABASE).format(name=ident))
