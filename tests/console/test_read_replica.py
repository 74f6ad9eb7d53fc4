"""The console reading from a hot standby (``Settings.read_dsn``, ``--read-dsn``).

A private primary (taskforge/private_server.py) is migrated, then copied with
``pg_basebackup -R`` into a second private server started as a streaming hot standby with
``max_standby_streaming_delay = 0`` (a conflicting query is cancelled at once). The console is
built with ``dsn`` = the primary and ``read_dsn`` = the standby, both as a login role holding
only ``taskforge_console``.

- Reads come from the standby: with its replay paused, a task submitted on the primary is not
  found by the console (404) while an action on it (cancel, through the API) succeeds on the
  primary; once replay resumes, the console shows it cancelled. Every page and API read renders
  on the standby (nothing a read runs writes). The lag shows on the dashboard and in /metrics.
- The standby stopped: pages and API still answer, from the primary, with the fallback banner;
  /metrics says so; only the first request waits for the standby; after the retry interval the
  reads go back to the standby once it is up again.
- A read the standby cancels on a conflict with recovery (SQLSTATE 40001) is shown as cut short.
- ``taskforge console`` takes the standby from ``$TASKFORGE_CONSOLE_READ_DSN`` (``--read-dsn``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from taskforge import database as tfdb
from taskforge.private_server import PrivateServer
from taskforge_console import Settings, create_app
from taskforge_console.db import REPLICA_APPLICATION_NAME, REPLICA_WAIT_SECONDS
from taskforge_console.state import console

from console_support import BEARER, TOKEN
from sqlcore_helpers import unique_name

DATABASE = "taskforge_replica_test"
READ_FROM = "X-TaskForge-Read-From"


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Pair:
    """A primary and its hot standby, with the console role on both."""

    def __init__(self) -> None:
        self.primary = PrivateServer()
        self.replica: PrivateServer | None = None
        self.role = f"tf_console_replica_{secrets.token_hex(3)}"

    def start(self) -> None:
        self.primary.start()
        with psycopg.connect(self.primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        tfdb.migrate(self.primary_admin)
        with psycopg.connect(self.primary_admin, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {self.role} LOGIN IN ROLE taskforge_console")
        self.replica = PrivateServer(
            standby_of=self.primary, settings={"hot_standby": "on", "max_standby_streaming_delay": "0"}
        )
        self.replica.start()
        assert self.replica.in_recovery()

    @property
    def primary_admin(self) -> str:
        return self.primary.dsn(DATABASE)

    @property
    def replica_admin(self) -> str:
        assert self.replica is not None
        return self.replica.dsn(DATABASE)

    def console_dsn(self, server: PrivateServer) -> str:
        return make_conninfo(server.dsn(DATABASE), user=self.role)

    def caught_up(self) -> bool:
        """The standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary_admin, autocommit=True) as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert target is not None
        with psycopg.connect(self.replica_admin, autocommit=True) as conn:
            row = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target[0],)).fetchone()
        return bool(row and row[0])

    def close(self) -> None:
        if self.replica is not None:
            self.replica.destroy()
        self.primary.destroy()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    servers = Pair()
    try:
        servers.start()
        yield servers
    finally:
        servers.close()


@pytest.fixture()
def replica_app(pair: Pair) -> Iterator[Callable[..., Any]]:
    apps: list[Any] = []

    def make(**overrides: Any) -> Any:
        assert pair.replica is not None
        values: dict[str, Any] = {
            "dsn": pair.console_dsn(pair.primary),
            "read_dsn": pair.console_dsn(pair.replica),
            "token": TOKEN,
        }
        values.update(overrides)
        app = create_app(Settings(**values))
        app.config["TESTING"] = True
        apps.append(app)
        return app

    yield make
    for app in apps:
        console(app).db.close()


def api_client(app: Any) -> Any:
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = BEARER["Authorization"]
    return client


def submit(pair: Pair, queue: str) -> int:
    with psycopg.connect(pair.primary_admin, autocommit=True) as conn:
        row = conn.execute("SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => %s)", (queue,))
        task_id = row.fetchone()
    assert task_id is not None
    return int(task_id[0])


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def console_sessions(dsn: str, role: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND application_name = %s",
            (role, REPLICA_APPLICATION_NAME),
        ).fetchone()
    assert row is not None
    return int(row[0])


@contextlib.contextmanager
def replay_paused(pair: Pair) -> Iterator[None]:
    with psycopg.connect(pair.replica_admin, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        wait_for(
            lambda: conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() == ("paused",),
            "replay to pause",
        )
        try:
            yield
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def test_reads_come_from_the_standby_and_actions_go_to_the_primary(pair: Pair, replica_app: Any) -> None:
    app = replica_app()
    api = api_client(app)
    queue = unique_name("replica")
    seen = submit(pair, queue)
    wait_for(pair.caught_up, "the standby to replay the first task")
    assert api.get(f"/api/tasks/{seen}").status_code == 200

    with replay_paused(pair):
        task_id = submit(pair, queue)
        # The standby has not replayed the task: the console's read does not find it ...
        missing = api.get(f"/api/tasks/{task_id}")
        assert missing.status_code == 404, missing.get_data(as_text=True)
        assert missing.headers[READ_FROM] == "replica"
        # ... while the action goes to the primary, which has it.
        cancelled = api.post(f"/api/tasks/{task_id}/cancel", json={"reason": "from the console"})
        assert cancelled.status_code == 200, cancelled.get_data(as_text=True)
        assert cancelled.get_json()["task_state"] == "CANCELLED"
        # The standby received WAL it has not replayed: the lag shows.
        time.sleep(0.3)
        dashboard = app.test_client().get("/", headers=BEARER)
        page = dashboard.get_data(as_text=True)
        assert dashboard.status_code == 200 and 'id="read-replica"' in page and "read replica lag" in page
        scrape = api.get("/metrics").get_data(as_text=True)
        assert metric(scrape, "taskforge_read_replica_up") == 1
        lag_bytes = metric(scrape, "taskforge_read_replica_lag_bytes")
        assert lag_bytes is not None and lag_bytes > 0, scrape
        lag_seconds = metric(scrape, "taskforge_read_replica_lag_seconds")
        assert lag_seconds is not None and lag_seconds > 0, scrape
        assert metric(scrape, "taskforge_console_reads_fell_back") == 0
        health = api.get("/healthz").get_json()
        assert health["read_replica"]["up"] is True and health["read_replica"]["in_recovery"] is True
        assert health["read_replica"]["lag_bytes"] > 0

    wait_for(pair.caught_up, "the standby to replay the cancellation")
    shown = api.get(f"/api/tasks/{task_id}")
    assert shown.status_code == 200 and shown.get_json()["state"] == "CANCELLED"
    assert shown.headers[READ_FROM] == "replica"
    assert console_sessions(pair.replica_admin, pair.role) >= 1
    # Caught up and streaming: the lag is 0, however long ago the primary last wrote.
    scrape = api.get("/metrics").get_data(as_text=True)
    assert metric(scrape, "taskforge_read_replica_lag_seconds") == 0
    assert metric(scrape, "taskforge_read_replica_lag_bytes") == 0

    # Every read runs on the standby: none of them writes (a write there is SQLSTATE 25006).
    browser = app.test_client()
    for path in (
        "/",
        "/dashboard/series.json",
        "/tasks",
        f"/tasks?queue={queue}",
        f"/tasks/{task_id}",
        "/queues",
        "/flow",
        "/workers",
        "/periodic",
        "/api/tasks",
        f"/api/tasks?queue={queue}",
        "/api/queues",
        "/api/workers",
        "/api/stats",
        "/healthz",
        "/metrics",
    ):
        answer = browser.get(path, headers=BEARER)
        assert answer.status_code == 200, (path, answer.get_data(as_text=True)[:2000])
        # /metrics reads vacuum's statistics and snapshot holders where they are: on the primary.
        expected = "replica, primary" if path == "/metrics" else "replica"
        assert answer.headers.get(READ_FROM) == expected, path
        assert "read replica cannot be reached" not in answer.get_data(as_text=True), path


def test_a_stopped_standby_sends_reads_to_the_primary(pair: Pair, replica_app: Any) -> None:
    assert pair.replica is not None
    app = replica_app()
    db = console(app).db
    db.replica_retry_seconds = 3.0
    api = api_client(app)
    queue = unique_name("fallback")
    task_id = submit(pair, queue)
    wait_for(pair.caught_up, "the standby to replay the task")
    assert api.get(f"/api/tasks/{task_id}").headers[READ_FROM] == "replica"

    pair.replica.stop("fast")
    try:
        started = time.monotonic()
        first = app.test_client().get("/", headers=BEARER)
        first_seconds = time.monotonic() - started
        page = first.get_data(as_text=True)
        assert first.status_code == 200, page
        assert "read replica cannot be reached" in page
        assert first.headers[READ_FROM] == "primary"
        assert 'id="read-replica"' in page and "reading from the primary" in page
        assert first_seconds < REPLICA_WAIT_SECONDS + 3.0

        # The standby is remembered as down: no request waits for it again.
        for path in (f"/api/tasks/{task_id}", "/tasks", "/api/stats", "/metrics", "/healthz"):
            started = time.monotonic()
            answer = api.get(path)
            took = time.monotonic() - started
            assert answer.status_code == 200, (path, answer.get_data(as_text=True)[:2000])
            assert answer.headers[READ_FROM] == "primary", path
            assert took < REPLICA_WAIT_SECONDS / 2, (path, took)
        scrape = api.get("/metrics").get_data(as_text=True)
        assert metric(scrape, "taskforge_read_replica_up") == 0
        assert metric(scrape, "taskforge_console_reads_fell_back") == 1
        assert metric(scrape, "taskforge_read_replica_lag_seconds") is None
        assert metric(scrape, "taskforge_console_scrape_cut_short") == 0
        health = api.get("/healthz")
        assert health.status_code == 200 and health.get_json()["read_replica"]["up"] is False
        tasks_page = app.test_client().get(f"/tasks?queue={queue}", headers=BEARER).get_data(as_text=True)
        assert "read replica cannot be reached" in tasks_page and str(task_id) in tasks_page
    finally:
        pair.replica.start()

    # Back up: after the retry interval one request tries the standby again, and reads return to it.
    def back_on_replica() -> bool:
        return api.get(f"/api/tasks/{task_id}").headers.get(READ_FROM) == "replica"

    wait_for(back_on_replica, "reads to return to the standby", timeout=60)
    page = app.test_client().get("/", headers=BEARER).get_data(as_text=True)
    assert "read replica cannot be reached" not in page


def test_a_recovery_conflict_shows_as_cut_short(pair: Pair, replica_app: Any) -> None:
    # Transaction-mode reads (pooler=transaction, valid against the server itself) keep the
    # locks of the dashboard's first statement while its second waits, so the conflict can be
    # made to order: the standby holds taskforge.workers for a primary transaction, the
    # console's read (tf_queues, then tf_workers) holds the tables of tf_queues and waits for
    # workers, and the primary then takes one of those tables: the standby must cancel the read.
    app = replica_app(pooler="transaction", statement_timeout_ms=60_000)
    browser = app.test_client()
    assert browser.get("/", headers=BEARER).status_code == 200
    wait_for(pair.caught_up, "the standby to catch up")

    holder = psycopg.connect(pair.primary_admin)
    answer: dict[str, Any] = {}
    try:
        holder.execute("LOCK TABLE taskforge.workers IN ACCESS EXCLUSIVE MODE")
        with psycopg.connect(pair.primary_admin, autocommit=True) as conn:
            conn.execute("SELECT txid_current()")  # a commit: flushes the WAL of the lock above
        with psycopg.connect(pair.replica_admin, autocommit=True) as replica:

            def standby_holds_workers() -> bool:
                row = replica.execute(
                    "SELECT count(*) FROM pg_locks WHERE relation = 'taskforge.workers'::regclass"
                    " AND mode = 'AccessExclusiveLock' AND granted"
                ).fetchone()
                return bool(row and row[0])

            wait_for(standby_holds_workers, "the standby to hold the lock on taskforge.workers")

            def load() -> None:
                response = browser.get("/", headers=BEARER)
                answer["status"] = response.status_code
                answer["page"] = response.get_data(as_text=True)

            reader = threading.Thread(target=load)
            reader.start()

            def waiting_reader() -> int | None:
                row = replica.execute(
                    "SELECT pid FROM pg_stat_activity WHERE usename = %s AND application_name = %s"
                    " AND wait_event_type = 'Lock'",
                    (pair.role, REPLICA_APPLICATION_NAME),
                ).fetchone()
                return None if row is None else int(row[0])

            wait_for(lambda: waiting_reader() is not None, "the console's read to wait on the standby")
            pid = waiting_reader()
            held = replica.execute(
                "SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE l.pid = %s AND l.granted AND c.relkind = 'r'"
                " AND c.relnamespace = 'taskforge'::regnamespace ORDER BY c.relname LIMIT 1",
                (pid,),
            ).fetchone()
            assert held is not None, "the console's read holds no taskforge table"
            with psycopg.connect(pair.primary_admin) as conn:
                conn.execute(f"LOCK TABLE taskforge.{held[0]} IN ACCESS EXCLUSIVE MODE")
                conn.commit()
            reader.join(timeout=30)
            assert not reader.is_alive()
    finally:
        holder.rollback()
        holder.close()

    assert answer["status"] == 200, answer["page"][:3000]
    assert "cut short by the read replica" in answer["page"]
    assert "conflict with recovery" in answer["page"]
    # The standby counted it (its statistics are flushed by the cancelled session, soon after).
    with psycopg.connect(pair.replica_admin, autocommit=True) as replica:

        def counted() -> bool:
            replica.execute("SELECT pg_stat_clear_snapshot()")
            row = replica.execute(
                "SELECT confl_lock FROM pg_stat_database_conflicts WHERE datname = current_database()"
            ).fetchone()
            return bool(row and row[0] >= 1)

        wait_for(counted, "pg_stat_database_conflicts to count the lock conflict", timeout=20)
    # The next read works again.
    assert "cut short by the read replica" not in browser.get("/", headers=BEARER).get_data(as_text=True)


def test_the_cli_takes_the_standby_from_the_environment(pair: Pair) -> None:
    assert pair.replica is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKFORGE_CONSOLE_")}
    env["TASKFORGE_CONSOLE_READ_DSN"] = pair.console_dsn(pair.replica)
    taskforge = Path(sys.executable).with_name("taskforge")
    process = subprocess.Popen(
        [str(taskforge), "console", "--dsn", pair.console_dsn(pair.primary), "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().strip()
        match = re.match(r"taskforge console: (http://127\.0\.0\.1:\d+/) \(.*reads from --read-dsn\)$", line)
        assert match, line
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(match.group(1) + "healthz", timeout=10) as response:
                    body = json.loads(response.read())
                    read_from = response.headers.get(READ_FROM)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "the console did not answer"
                time.sleep(0.1)
        assert body["status"] == "ok" and body["read_replica"]["in_recovery"] is True, body
        assert read_from == "replica"
    finally:
        process.send_signal(2)
        try:
            assert process.wait(15) == 0
        finally:
            if process.poll() is None:
                process.kill()
