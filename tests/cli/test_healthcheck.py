"""`taskforge healthcheck`: exit 0 only when the database answers, no migration is pending and a
scheduler is alive in tf_schedulers; otherwise one line naming the failed check (exit 4 for the
database, 1 for the schema and the scheduler), and the same verdict as JSON with --json.

The scheduler beats here are tf_scheduler_heartbeat calls made by hand; tests/processes covers
a real scheduler process."""

from __future__ import annotations

import json
import uuid

import psycopg
from click.testing import CliRunner

from taskforge import database as tfdb, sql
from taskforge.cli import EXIT_DATABASE, main

from sqlcore_helpers import as_user

NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}


def healthcheck(*args: str):
    return CliRunner().invoke(main, ["healthcheck", *args], env=NO_ENV_DSN, catch_exceptions=False)


def unhealthy_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskforge: unhealthy: "), result.stderr
    return lines[0].removeprefix("taskforge: unhealthy: ")


def beat(dsn: str, scheduler_id: uuid.UUID, name: str, heartbeat_seconds: float = 5, stopping: bool = False) -> None:
    """What a scheduler process sends (taskforge.sql.SCHEDULER_HEARTBEAT)."""
    params = {"scheduler_id": scheduler_id, "name": name, "hostname": "probe-host", "pid": 4242}
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SCHEDULER_HEARTBEAT, {**params, "heartbeat_seconds": heartbeat_seconds, "stopping": stopping})


def test_each_check_in_turn(fresh_database):
    dsn = fresh_database("taskforge_health")
    line = unhealthy_line(healthcheck("--dsn", dsn), 1)
    assert line.startswith("schema: 1 migration(s) pending (0001_initial): run `taskforge db migrate`"), line

    tfdb.migrate(dsn)
    line = unhealthy_line(healthcheck("--dsn", dsn), 1)
    assert line == "scheduler: no scheduler alive: none has run against this database"

    scheduler_id = uuid.uuid4()
    beat(dsn, scheduler_id, "probe-a", heartbeat_seconds=2)
    result = healthcheck("--dsn", dsn)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "healthy: database reachable; schema up to date (schema version 1); scheduler 1 alive (probe-a beat "
    )
    doc = json.loads(healthcheck("--dsn", dsn, "--json").stdout)
    assert doc["ok"] is True and doc["failed"] is None
    assert [c["status"] for c in doc["checks"].values()] == ["ok", "ok", "ok"]
    assert doc["checks"]["scheduler"]["alive"][0]["name"] == "probe-a"

    # Three missed beats (database time): stale, and the probe fails.
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "UPDATE taskforge.schedulers SET started_at = started_at - interval '7 seconds', "
            "last_heartbeat_at = last_heartbeat_at - interval '7 seconds' WHERE scheduler_id = %s",
            (scheduler_id,),
        )
    line = unhealthy_line(healthcheck("--dsn", dsn), 1)
    assert line.startswith("scheduler: no scheduler alive (1 stale, 0 stopped); the latest beat was probe-a's, 7."), (
        line
    )
    result = healthcheck("--dsn", dsn, "--json")
    assert result.exit_code == 1 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["failed"] == "scheduler" and doc["checks"]["scheduler"]["stale"] == 1

    # A beat brings it back; a clean stop is "stopped", not alive.
    beat(dsn, scheduler_id, "probe-a", heartbeat_seconds=2)
    assert healthcheck("--dsn", dsn).exit_code == 0
    beat(dsn, scheduler_id, "probe-a", stopping=True)
    line = unhealthy_line(healthcheck("--dsn", dsn), 1)
    assert line.startswith("scheduler: no scheduler alive (0 stale, 1 stopped)"), line


def test_unreachable_database_is_exit_4_and_later_checks_are_skipped():
    dsn = "host=127.0.0.1 port=1 user=postgres dbname=never"
    line = unhealthy_line(healthcheck("--dsn", dsn, "--connect-timeout", "2"), EXIT_DATABASE)
    assert line.startswith("database: cannot connect: "), line
    result = healthcheck("--dsn", dsn, "--json")
    assert result.exit_code == EXIT_DATABASE
    doc = json.loads(result.stdout)
    assert doc["failed"] == "database"
    assert [c["status"] for c in doc["checks"].values()] == ["failed", "skipped", "skipped"]


def test_no_dsn_is_one_line():
    result = healthcheck()
    assert result.exit_code == EXIT_DATABASE
    assert result.stderr.strip() == "taskforge: no database given: pass --dsn, or set TASKFORGE_DSN or DATABASE_URL"


def test_a_probe_login_needs_taskforge_client_and_the_migration_history(login_role, fresh_database):
    """docs/operations.md (Probes): a login in taskforge_client with SELECT on yoyo's
    _yoyo_migration and _yoyo_version passes; without those grants the schema check says why."""
    role = login_role("taskforge_client")
    dsn = fresh_database("taskforge_health_probe")
    tfdb.migrate(dsn)
    beat(dsn, uuid.uuid4(), "probe-b")
    probe = as_user(dsn, role)
    line = unhealthy_line(healthcheck("--dsn", probe), 1)
    assert line.startswith("schema: cannot read the migrations: ") and "see docs/operations.md, Probes" in line, line
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'GRANT SELECT ON public._yoyo_migration, public._yoyo_version TO "{role}"')
    result = healthcheck("--dsn", probe)
    assert result.exit_code == 0, result.output
