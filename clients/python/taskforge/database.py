"""Connecting to PostgreSQL and applying TaskForge migrations (yoyo-migrations)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import set_json_loads

from . import pooling, sql
from .dbsource import db_dir

__all__ = [
    "UNDECODED_JSON_KEY",
    "DsnMissing",
    "HistoryRange",
    "MigrationStatus",
    "TolerantJsonLoads",
    "connect",
    "history_ranges",
    "migrate",
    "partition_history",
    "resolve_dsn",
    "status",
]

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


#: The one key of the placeholder that stands for a JSON document a reader did not decode.
UNDECODED_JSON_KEY = "taskforge_not_decoded"


def _deeper_than(value: Any, levels: int) -> bool:
    """Whether decoded JSON nests arrays and objects more than ``levels`` deep (the outermost
    array or object is level 1). Iterative: any depth Python decoded can be measured."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        children = item.values() if isinstance(item, dict) else item
        if depth > levels:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _brackets(data: str | bytes) -> int:
    """How many ``[`` and ``{`` the JSON text holds: at least its depth of nesting."""
    if isinstance(data, bytes):
        return data.count(b"[") + data.count(b"{")
    return data.count("[") + data.count("{")


class TolerantJsonLoads:
    """A JSON loader for the connections of readers (the CLI, the console): ``json.loads``,
    except that a document it cannot decode because of its nesting (RecursionError: Python's json
    module stops near 1000 levels) becomes a placeholder instead of failing the whole fetch.

    tf_submit refuses payloads nested over 100 levels, but a table owner can write any document,
    and results and errors are stored as given. The placeholder is ``{UNDECODED_JSON_KEY: text}``,
    the text saying why and how to read the document with SQL. With ``max_depth``, a decoded
    document nested deeper than that is replaced too (for a reader whose own encoder stops
    earlier). Any other error is raised as ``json.loads`` raises it. Install it with
    :func:`use_tolerant_json`; keep instances for the life of the process (psycopg caches the
    loader class it makes for each).
    """

    def __init__(self, max_depth: int | None = None, beyond: str = ""):
        self.max_depth = max_depth
        self.beyond = beyond

    def __call__(self, data: str | bytes) -> Any:
        try:
            value = json.loads(data)
        except RecursionError:
            return _placeholder("nested too deep for Python's json module to decode (about 1000 levels)")
        if (
            self.max_depth is not None
            and _brackets(data) > self.max_depth  # cheap: most documents stop here
            and _deeper_than(value, self.max_depth)
        ):
            return _placeholder(f"nested more than {self.max_depth} levels deep{self.beyond}")
        return value


def _placeholder(why: str) -> dict[str, str]:
    """What a reader shows instead of a JSON document it did not decode."""
    return {
        UNDECODED_JSON_KEY: f"this JSON document is {why}, so it is not shown here; read it as text with SQL, "
        "for example SELECT payload::text FROM taskforge.tf_tasks WHERE task_id = ... (likewise result and "
        "last_error, or result and error of taskforge.tf_attempts)"
    }


#: The loader of :func:`connect`'s connections (the CLI's): a placeholder only where decoding fails.
JSON_LOADS = TolerantJsonLoads()


def use_tolerant_json(conn: psycopg.Connection[Any], loads: TolerantJsonLoads = JSON_LOADS) -> None:
    """Decode ``json`` and ``jsonb`` values fetched on ``conn`` with ``loads``."""
    set_json_loads(loads, context=conn)


def connect(
    dsn: str | None = None,
    *,
    autocommit: bool = True,
    application_name: str = APPLICATION_NAME,
    pooler: str | None = None,
    **kwargs: Any,
) -> psycopg.Connection:
    """Open a psycopg connection (autocommit by default: every tf_* call is its own transaction).
    JSON documents are decoded by :data:`JSON_LOADS` (a placeholder for one nested too deep for
    Python). ``pooler``: ``none`` or ``transaction`` (nothing prepared: :mod:`taskforge.pooling`);
    None = ``$TASKFORGE_POOLER``, else ``none``. Raises ``ValueError`` for another pooler."""
    extra = {**pooling.connect_kwargs(pooling.resolve_pooler(pooler)), **kwargs}
    conn = psycopg.connect(resolve_dsn(dsn), autocommit=autocommit, application_name=application_name, **extra)
    use_tolerant_json(conn)
    return conn


def _yoyo_uri(dsn: str) -> str:
    """Turn any libpq DSN into the postgresql+psycopg:// URI yoyo wants (multi-host DSNs too)."""
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
    # A socket directory and a multi-host list (host=a,b port=5433,5434, for failover) cannot be
    # written in a URI's netloc: they go in the query, which yoyo hands to psycopg.connect as is.
    if host and not host.startswith("/") and "," not in host and "," not in str(port or ""):
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


@dataclass(frozen=True)
class HistoryRange:
    """One task-id range of the partitioned history: tasks_p<partition_no> and
    attempts_p<partition_no> hold the tasks with first_task_id <= task_id < end_task_id
    (first_task_id None: from the lowest id)."""

    partition_no: int
    first_task_id: int | None
    end_task_id: int


def partition_history(dsn: str | None, tasks_per_partition: int, partitions_ahead: int = 1) -> list[HistoryRange]:
    """Convert tasks and attempts, with their data, to the partitioned history
    (``taskforge.tf_partition_history``; one transaction, ACCESS EXCLUSIVE on both tables while
    it runs, waiting at most 5 s for it). Connects as the DSN's user, who must own the schema or be
    a superuser. Returns the ranges made. Raises psycopg errors: TF400 for a bad argument, TF409
    when already partitioned, 55P03 when the tables stayed locked."""
    with connect(dsn) as conn, conn.transaction():
        # Queued for its ACCESS EXCLUSIVE lock, the conversion stalls every claim behind it:
        # give up after a while instead (55P03), and try again when the workers are stopped.
        conn.execute("SET LOCAL lock_timeout = '5s'")
        conn.execute(
            sql.PARTITION_HISTORY,
            {"tasks_per_partition": tasks_per_partition, "partitions_ahead": partitions_ahead},
        )
        return history_ranges(conn)


def history_ranges(conn: psycopg.Connection) -> list[HistoryRange]:
    """The ranges of the partitioned history, oldest first; empty on the default layout."""
    return [HistoryRange(*row) for row in conn.execute(sql.HISTORY_RANGES).fetchall()]


def migration_sql(migration_id: str) -> str:
    """The SQL a migration applies: its frozen copy under ``db/migrations/frozen/`` (what
    ``taskforge db migrate`` runs for it). Raises FileNotFoundError for an unknown id."""
    return (db_dir() / "migrations" / "frozen" / f"{migration_id}.sql").read_text(encoding="utf-8")


def with_dbname(dsn: str, dbname: str) -> str:
    """Return dsn pointing at another database of the same server (used by tests and the demo)."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo("", **params)
