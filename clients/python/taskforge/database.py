"""Connecting to PostgreSQL and applying TaskForge migrations (yoyo-migrations)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import sql
from .dbsource import db_dir

__all__ = ["DsnMissing", "MigrationStatus", "connect", "migrate", "resolve_dsn", "status"]

APPLICATION_NAME = "taskforge"


class DsnMissing(RuntimeError):
    """No DSN was given and neither TASKFORGE_DSN nor DATABASE_URL is set."""


def resolve_dsn(dsn: str | None = None) -> str:
    """Return the DSN to use: the argument, else $TASKFORGE_DSN, else $DATABASE_URL.

    Raises DsnMissing when none is set. Accepts libpq key=value strings and URIs.
    """
    for candidate in (dsn, os.environ.get("TASKFORGE_DSN"), os.environ.get("DATABASE_URL")):
        if candidate:
            return candidate
    raise DsnMissing("no database given: pass --dsn, or set TASKFORGE_DSN or DATABASE_URL")


def connect(
    dsn: str | None = None, *, autocommit: bool = True, application_name: str = APPLICATION_NAME, **kwargs: Any
) -> psycopg.Connection:
    """Open a psycopg connection (autocommit by default: every tf_* call is its own transaction)."""
    return psycopg.connect(resolve_dsn(dsn), autocommit=autocommit, application_name=application_name, **kwargs)


def _yoyo_uri(dsn: str) -> str:
    """Turn any libpq DSN into the postgresql+psycopg:// URI yoyo wants."""
    params = conninfo_to_dict(dsn)
    user = str(params.pop("user", None) or "")
    password = str(params.pop("password", None) or "")
    host = str(params.pop("host", None) or "")
    port = params.pop("port", None)
    dbname = str(params.pop("dbname", None) or "")
    from urllib.parse import quote, urlencode

    auth = ""
    if user:
        auth = quote(user, safe="")
        if password:
            auth += ":" + quote(password, safe="")
        auth += "@"
    netloc = ""
    if host and not host.startswith("/"):
        netloc = host if ":" not in host else f"[{host}]"
    elif host:
        params["host"] = host
    if port:
        if netloc:
            netloc += f":{port}"
        else:
            params["port"] = port
    query = ("?" + urlencode(params)) if params else ""
    return f"postgresql+psycopg://{auth}{netloc}/{quote(dbname or '', safe='')}{query}"


def _backend_and_migrations(dsn: str | None) -> tuple[Any, Any]:  # yoyo has no type hints
    from yoyo import get_backend, read_migrations

    backend = get_backend(_yoyo_uri(resolve_dsn(dsn)))
    migrations = read_migrations(str(db_dir() / "migrations"))
    return backend, migrations


@dataclass(frozen=True)
class MigrationStatus:
    """What is applied and what is pending (lists of migration ids), and the SQL API version."""

    applied: list[str]
    pending: list[str]
    schema_version: int | None


def migrate(dsn: str | None = None) -> list[str]:
    """Apply every pending migration under a yoyo lock. Returns the ids applied (empty if none)."""
    backend, migrations = _backend_and_migrations(dsn)
    with backend.lock():
        pending = backend.to_apply(migrations)
        backend.apply_migrations(pending)
    return [m.id for m in pending]


def status(dsn: str | None = None) -> MigrationStatus:
    """Report applied and pending migrations and tf_schema_version() (None before the first)."""
    backend, migrations = _backend_and_migrations(dsn)
    pending = [m.id for m in backend.to_apply(migrations)]
    applied = [m.id for m in migrations if m.id not in pending]
    version = None
    with connect(dsn) as conn:
        if sql.one_value(conn, sql.SCHEMA_EXISTS):
            version = sql.one_value(conn, sql.SCHEMA_VERSION)
    return MigrationStatus(applied=applied, pending=pending, schema_version=version)


def migration_sql(migration_id: str) -> str:
    """The SQL a migration applies: its frozen copy under ``db/migrations/frozen/`` (what
    ``taskforge db migrate`` runs for it). Raises FileNotFoundError for an unknown id."""
    return (db_dir() / "migrations" / "frozen" / f"{migration_id}.sql").read_text(encoding="utf-8")


def with_dbname(dsn: str, dbname: str) -> str:
    """Return dsn pointing at another database of the same server (used by tests and the demo)."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo("", **params)
