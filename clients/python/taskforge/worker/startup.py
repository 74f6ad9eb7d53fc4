"""What the worker checks and sets up before it runs: errors, schema version, logging."""

from __future__ import annotations

import logging

import psycopg

from .. import SCHEMA_VERSION, sql
from .logs import make_formatter

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


def configure_logging(level: str | int = "INFO", process: str = "taskforge", log_format: str = "text") -> None:
    """Log lines on stderr, one per event: ``text``, ``2025-01-31T12:00:00.123Z INFO
    taskforge.worker[pid]: ...``, or ``json``, one object per line with time, level, logger,
    message and the task, attempt and worker ids where known (:mod:`.logs`).

    The ``taskforge`` loggers log at ``level`` through this handler only (one set before is
    replaced). Other libraries' lines (``psycopg.pool``, ...) reach the root logger: unless the
    application gave it a handler of its own, this one is added there too (replacing the one an
    earlier call added), so that their warnings come in the same format. ValueError naming
    ``log_format`` for another format. Timestamps are the wall clock in UTC (for people; no
    decision uses them).
    """
    handler = logging.StreamHandler()
    handler.setFormatter(make_formatter(log_format))
    root = logging.getLogger("taskforge")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    root.propagate = False
    top = logging.getLogger()
    ours = [h for h in top.handlers if getattr(h, _OURS, False)]
    if len(ours) == len(top.handlers):  # none of the application's own
        for old in ours:
            top.removeHandler(old)
        other = logging.StreamHandler()
        other.setFormatter(handler.formatter)
        setattr(other, _OURS, True)
        top.addHandler(other)


#: Marks the root logger's handler that configure_logging added.
_OURS = "taskforge_handler"
