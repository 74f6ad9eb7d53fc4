"""What the worker checks and sets up before it runs: errors, schema version, logging."""

from __future__ import annotations

import logging
import time

import psycopg

from .. import SCHEMA_VERSION, sql

__all__ = ["SchemaVersionError", "WorkerConfigError", "WorkerStartupError", "check_schema", "configure_logging"]


class WorkerStartupError(RuntimeError):
    """The worker cannot start (schema missing, bad configuration); the message says why."""


class WorkerConfigError(WorkerStartupError):
    """The configuration names task types that have no handler (or there are none)."""


class SchemaVersionError(WorkerStartupError):
    """tf_schema_version() is newer than :data:`taskforge.SCHEMA_VERSION`."""


def check_schema(conn: psycopg.Connection) -> int:
    """Return tf_schema_version(), refusing a missing schema or a newer version.

    Raises WorkerStartupError when schema taskforge is absent and SchemaVersionError when the
    database's version is newer than :data:`taskforge.SCHEMA_VERSION`.
    """
    row = conn.execute(sql.SCHEMA_EXISTS).fetchone()
    if not row or not row[0]:
        raise WorkerStartupError("schema taskforge is not installed in this database; run `taskforge db migrate`")
    version_row = conn.execute(sql.SCHEMA_VERSION).fetchone()
    version = int(version_row[0]) if version_row else 0
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database has TaskForge SQL API version {version}, newer than version {SCHEMA_VERSION} "
            f"that this taskforge package understands; upgrade the package (refusing to start)"
        )
    return version


def configure_logging(level: str | int = "INFO", process: str = "taskforge") -> None:
    """One readable line per event on stderr: ``2025-01-31T12:00:00.123Z INFO taskforge.worker[pid]: ...``.

    Timestamps are the local wall clock in UTC (for people; no decision uses them).
    """
    handler = logging.StreamHandler()
    formatter = logging.Formatter(
        "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s[%(process)d]: %(message)s", datefmt="%Y-%m-%dT%H:%M:%S"
    )
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    root = logging.getLogger("taskforge")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    root.propagate = False
