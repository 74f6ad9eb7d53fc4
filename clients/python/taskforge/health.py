"""The checks behind ``taskforge healthcheck`` (container probes), in order:

1. ``database``: a connection opens and answers (``connect_timeout`` seconds at most);
2. ``schema``: no migration is pending, the same check as ``taskforge db status``;
3. ``scheduler``: at least one scheduler is ``alive`` in ``tf_schedulers`` (its last
   ``tf_scheduler_heartbeat`` is less than three beats old, database time).

A check runs only when the one before it passed (the others are ``skipped``). The login needs
to read ``tf_schedulers`` (``taskforge_client``) and yoyo's migration history (see
docs/operations.md, "Probes").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from . import client, database as db
from .rows import Scheduler

__all__ = ["CHECKS", "Check", "HealthReport", "check"]

#: The checks, in the order they run.
CHECKS = ("database", "schema", "scheduler")


@dataclass
class Check:
    """One check: ``status`` is ``ok``, ``failed`` or ``skipped``; ``detail`` says what was found."""

    name: str
    status: str = "skipped"
    detail: str = "not run: an earlier check failed"
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class HealthReport:
    """Every check, in :data:`CHECKS` order."""

    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.status == "ok" for c in self.checks)

    @property
    def failed(self) -> Check | None:
        """The first check that failed (None when all passed)."""
        return next((c for c in self.checks if c.status == "failed"), None)

    def to_dict(self) -> dict[str, Any]:
        failed = self.failed
        return {
            "ok": self.ok,
            "failed": failed.name if failed else None,
            "checks": {c.name: {"status": c.status, "detail": c.detail, **c.data} for c in self.checks},
        }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _database(dsn: str, result: Check, connect_timeout: float) -> psycopg.Connection | None:
    try:
        conn = db.connect(dsn, connect_timeout=max(1, round(connect_timeout)), application_name="taskforge-healthcheck")
        conn.execute("SELECT 1")
    except psycopg.Error as exc:
        result.status, result.detail = "failed", f"cannot connect: {_first_line(exc)}"
        return None
    result.status, result.detail = "ok", "reachable"
    return conn


def _schema(dsn: str, result: Check) -> None:
    try:
        st = db.status(dsn)
    except psycopg.Error as exc:
        sqlstate = getattr(exc, "sqlstate", None) or ""
        hint = (
            " (this login may not read the migration history: see docs/operations.md, Probes)"
            if sqlstate == "42501"
            else ""
        )
        result.status, result.detail = "failed", f"cannot read the migrations: {_first_line(exc)}{hint}"
        return
    result.data = {"schema_version": st.schema_version, "pending": st.pending}
    if st.pending:
        result.status = "failed"
        result.detail = f"{len(st.pending)} migration(s) pending ({', '.join(st.pending)}): run `taskforge db migrate`"
    else:
        result.status, result.detail = "ok", f"up to date (schema version {st.schema_version})"


def _scheduler(conn: psycopg.Connection, result: Check) -> None:
    try:
        rows = client.schedulers(conn, include_stopped=True)
    except psycopg.Error as exc:
        result.status, result.detail = "failed", f"cannot read tf_schedulers: {_first_line(exc)}"
        return
    by_liveness: dict[str, list[Scheduler]] = {"alive": [], "stale": [], "stopped": []}
    for row in rows:
        by_liveness[row.liveness].append(row)
    alive, stale, stopped = by_liveness["alive"], by_liveness["stale"], by_liveness["stopped"]
    result.data = {
        "alive": [{"name": r.name, "seconds_since_heartbeat": r.seconds_since_heartbeat} for r in alive],
        "stale": len(stale),
        "stopped": len(stopped),
    }
    if alive:
        newest = min(alive, key=lambda r: r.seconds_since_heartbeat)
        result.status = "ok"
        result.detail = f"{len(alive)} alive ({newest.name} beat {newest.seconds_since_heartbeat:.1f} s ago)"
        return
    result.status = "failed"
    if not rows:
        result.detail = "no scheduler alive: none has run against this database"
        return
    latest = min(rows, key=lambda r: r.seconds_since_heartbeat)
    result.detail = (
        f"no scheduler alive ({len(stale)} stale, {len(stopped)} stopped); the latest beat was "
        f"{latest.name}'s, {latest.seconds_since_heartbeat:.1f} s ago"
    )


def check(dsn: str | None = None, *, connect_timeout: float = 5.0) -> HealthReport:
    """Run the checks (see the module docstring) against ``dsn`` (else $TASKFORGE_DSN, else
    $DATABASE_URL; raises :class:`taskforge.database.DsnMissing` when none is set)."""
    target = db.resolve_dsn(dsn)
    report = HealthReport([Check(name) for name in CHECKS])
    database, schema, scheduler = report.checks
    conn = _database(target, database, connect_timeout)
    if conn is None:
        return report
    with conn:
        _schema(target, schema)
        if schema.status == "ok":
            _scheduler(conn, scheduler)
    return report
