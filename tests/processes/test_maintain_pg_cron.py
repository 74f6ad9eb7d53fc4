"""Maintenance without a Python process: pg_cron (Debian's postgresql-<major>-cron) runs
``CALL taskforge.tf_maintain(run_seconds => 55, ...)`` every minute on a private server of the
test's own (shared_preload_libraries must name pg_cron, which the shared test server does not).

With no scheduler process at all: an expired lease is recovered (and, once a run is going, within
the documented bound: 60 - run_seconds + interval_seconds, plus a pass), each periodic tick is
enqueued exactly once, tf_schedulers shows tf_maintain alive and ``taskforge healthcheck`` passes.
It waits for pg_cron's first minute boundary, so it takes one to two minutes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from taskforge import database
from taskforge.private_server import PrivateServer, find_bindir

from sqlcore_helpers import claimed_by_a_vanished_worker, wait_until

pytestmark = pytest.mark.timeout(400)

RUN_SECONDS, INTERVAL_SECONDS = 55, 0.5
JOB = f"CALL taskforge.tf_maintain(run_seconds => {RUN_SECONDS}, interval_seconds => {INTERVAL_SECONDS})"


def pg_cron_missing() -> str | None:
    try:
        bindir = find_bindir()
    except Exception as exc:  # noqa: BLE001 - reported as the skip reason
        return str(exc)
    major = bindir.parent.name
    library = Path(f"/usr/lib/postgresql/{major}/lib/pg_cron.so")
    if not library.exists():
        return f"pg_cron is not installed for PostgreSQL {major} (Debian: postgresql-{major}-cron; make pg-cron)"
    return None


@pytest.fixture()
def cron_server():
    why = pg_cron_missing()
    if why:
        pytest.skip(why)
    server = PrivateServer(
        settings={
            "shared_preload_libraries": "pg_cron",
            "cron.database_name": "postgres",
            "cron.use_background_workers": "on",
            "max_worker_processes": "16",
        }
    )
    try:
        server.start()
        yield server
    finally:
        print(f"----- private server log\n{server.log_tail(60)}")
        server.destroy()


def lag_seconds(conn: psycopg.Connection, task_id: int) -> float | None:
    row = conn.execute(
        "SELECT extract(epoch FROM finished_at - lease_expires_at)::float8 FROM taskforge.attempts "
        "WHERE task_id = %s AND state = 'ABANDONED'",
        (task_id,),
    ).fetchone()
    return row[0] if row else None


def test_pg_cron_runs_maintenance_without_a_scheduler_process(cron_server):
    dsn = cron_server.dsn("postgres")
    database.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_cron")
        conn.execute(
            "SELECT taskforge.tf_schedule_periodic(name => 'each-minute', cron => '* * * * *', task_type => 'noop')"
        )
        first = claimed_by_a_vanished_worker(conn, "first", lease_seconds=0.2)
        conn.execute("SELECT cron.schedule('taskforge-maintain', '* * * * *', %s)", (JOB,))
        # pg_cron starts the job at the next minute boundary.
        wait_until(
            lambda: lag_seconds(conn, first) is not None,
            90,
            interval=0.2,
            message="pg_cron's first tf_maintain to recover the lease",
        )
        assert conn.execute("SELECT state FROM taskforge.tasks WHERE task_id = %s", (first,)).fetchone() == ("QUEUED",)
        # While a run is going, a lease that expires is recovered within an interval or so; at
        # worst within the gap between two runs (60 - run_seconds) plus an interval.
        second = claimed_by_a_vanished_worker(conn, "second", lease_seconds=0.5)
        wait_until(lambda: lag_seconds(conn, second) is not None, 30, 0.2, "the second lease to be recovered")
        lag = lag_seconds(conn, second)
        print(f"recovery lag under pg_cron: {lag * 1000:.0f} ms")
        assert 0 <= lag <= 60 - RUN_SECONDS + INTERVAL_SECONDS + 2.0
        alive = conn.execute("SELECT name, liveness FROM taskforge.tf_schedulers").fetchall()
        assert alive == [("tf_maintain", "alive")]
        # Every tick that has come since the schedule was made is enqueued, each exactly once.
        wait_until(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM taskforge.tasks WHERE idempotency_key LIKE 'periodic:each-minute:%'"
                ).fetchone()[0]
                >= 1
            ),
            70,
            interval=0.2,
            message="a periodic tick to be enqueued",
        )
        keys = conn.execute(
            "SELECT idempotency_key, count(*) FROM taskforge.tasks WHERE idempotency_key LIKE 'periodic:each-minute:%' "
            "GROUP BY 1"
        ).fetchall()
        assert keys and all(n == 1 for _, n in keys), keys
        failed = conn.execute(
            "SELECT status, return_message FROM cron.job_run_details WHERE status = 'failed'"
        ).fetchall()
        assert failed == []
        assert conn.execute("SELECT * FROM taskforge.tf_invariant_violations").fetchall() == []
    taskforge = shutil.which("taskforge", path=str(Path(sys.executable).parent)) or "taskforge"
    probe = subprocess.run(
        [taskforge, "healthcheck", "--json", "--dsn", dsn], capture_output=True, text=True, timeout=60
    )
    assert probe.returncode == 0, probe.stdout + probe.stderr
    report = json.loads(probe.stdout)
    scheduler = report["checks"]["scheduler"]
    assert scheduler["status"] == "ok" and "tf_maintain" in scheduler["detail"], scheduler
