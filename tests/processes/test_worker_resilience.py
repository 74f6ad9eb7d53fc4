"""A worker stops in bounded time, rides out transient database errors and keeps $PGOPTIONS.

- a stop must not wait for a statement stuck on a lock (here: another session holds the
  worker's row in taskforge.workers FOR UPDATE), and a second signal must end the stop at once;
- an error that says nothing about the lease (SQLSTATE 25006 read_only_sql_transaction, as
  during a failover) must not stop renewals: only ``renewed = false`` means the lease is lost;
- ``$PGOPTIONS`` reaches every connection, together with the worker's own -c settings;
- run(exit_process=False) leaves no thread or connection of the worker behind after a forced stop.
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from itest_support import LONG, history, submit, task, wait_for, wait_log, wait_registered, wait_running

pytestmark = pytest.mark.timeout(300)

# Connections of the worker started by the test (workers of earlier tests are gone by then).
WORKER_CONNECTIONS = """
SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE 'taskforge-worker/%%'
   AND application_name <> 'taskforge-worker/exit' AND backend_start > %(since)s
"""


def hold_worker_row(dsn: str, worker_id: str) -> psycopg.Connection:
    """Open a transaction holding the worker's taskforge.workers row; the caller rolls it back."""
    locker = psycopg.connect(dsn, application_name="taskforge-test/locker")
    locker.execute("SELECT 1 FROM taskforge.workers WHERE worker_id = %s FOR UPDATE", (worker_id,))
    return locker


HEARTBEAT_WAITS_FOR_LOCK = """
SELECT EXISTS (SELECT FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'taskforge-worker/heartbeat'
                  AND wait_event_type = 'Lock' AND backend_start > %(since)s)
"""


LISTENING = """
SELECT EXISTS (SELECT FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'taskforge-worker/listen'
                  AND backend_start > %(since)s)
"""


def heartbeat_blocked(conn: psycopg.Connection, worker, since) -> bool:
    """The worker's heartbeat has met the lock (it waits for it now, or it gave up on it)."""
    return "heartbeat failed" in worker.log() or conn.execute(HEARTBEAT_WAITS_FOR_LOCK, {"since": since}).fetchone()[0]


def test_a_stop_does_not_wait_for_a_heartbeat_stuck_on_the_worker_row(spawn, conn, db_dsn, queue):
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    worker = spawn.worker("--queue", queue, "--heartbeat-seconds", "1")
    worker_id = wait_registered(conn, worker)
    locker = hold_worker_row(db_dsn, worker_id)
    try:
        # The heartbeat meets the lock: it gives up after its lock_timeout and tries again.
        wait_for(
            lambda: heartbeat_blocked(conn, worker, since), message="the heartbeat to meet the lock", procs=[worker]
        )
        worker.signal(15)
        assert worker.wait(timeout=LONG) == 0  # deregistering gives up after a bounded time
        log = worker.log()
        assert "could not deregister worker" in log and "LockNotAvailable" in log
    finally:
        locker.rollback()
        locker.close()


def test_a_second_signal_ends_a_stop_that_waits_for_a_lock(spawn, conn, db_dsn, queue):
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    worker = spawn.worker("--queue", queue, "--heartbeat-seconds", "1")
    worker_id = wait_registered(conn, worker)
    locker = hold_worker_row(db_dsn, worker_id)
    try:
        wait_for(
            lambda: heartbeat_blocked(conn, worker, since), message="the heartbeat to meet the lock", procs=[worker]
        )
        worker.signal(15)
        wait_log(worker, "SIGTERM received: claiming nothing new")
        # The clean stop has begun once its listener has closed its connection; it then tries to
        # deregister (the row stays locked) for up to 10 s.
        wait_for(
            lambda: not conn.execute(LISTENING, {"since": since}).fetchone()[0],
            message="the listener to stop",
            procs=[worker],
        )
        worker.signal(15)
        assert worker.wait(timeout=8) == 1
        assert "SIGTERM received again: exiting now" in worker.log()
    finally:
        locker.rollback()
        locker.close()


def test_a_read_only_window_during_renewals_does_not_lose_the_lease(spawn_factory, fresh_database, queue):
    from taskforge import database as tfdb

    dsn = fresh_database("taskforge_itest_ro")
    tfdb.migrate(dsn)
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    spawn = spawn_factory(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        worker = spawn.worker("--queue", queue, "--lease-seconds", "6", "--heartbeat-seconds", "1")
        wait_registered(conn, worker)
        # Runs for two leases: it succeeds in one attempt only if renewals go on after the window.
        task_id = submit(conn, "sleep", {"ms": 12000}, queue=queue)
        wait_running(conn, task_id, procs=[worker])
        try:
            # What a failover looks like to the worker: its connections drop and the new ones are
            # read-only for a moment (SQLSTATE 25006 read_only_sql_transaction).
            conn.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name IN ('taskforge-worker/renew', 'taskforge-worker/heartbeat')"
            )
            wait_for(
                lambda: "renew" in worker.log() and "ReadOnlySqlTransaction" in worker.log(),
                message="a renewal to fail with 25006",
                procs=[worker],
            )
        finally:
            conn.execute(f'ALTER DATABASE "{dbname}" RESET default_transaction_read_only')
        wait_log(worker, f"task {task_id} attempt 1 handler ended")
        wait_for(lambda: task(conn, task_id)["state"] != "RUNNING", message="the task to end", procs=[worker])
        assert history(conn, task_id) == ["SUCCEEDED"], worker.log()[-4000:]
        log = worker.log()
        assert "lease lost" not in log and "refused" not in log
        assert worker.alive()
        worker.signal(15)
        assert worker.wait(timeout=LONG) == 0


def test_pgoptions_reach_every_connection(db_dsn, monkeypatch):
    from psycopg.conninfo import make_conninfo

    from taskforge.worker import Worker, WorkerConfig

    monkeypatch.setenv("PGOPTIONS", "-c work_mem=7MB -c statement_timeout=45000")
    dsn = make_conninfo(db_dsn, options="-c maintenance_work_mem=9MB")
    worker = Worker(dsn, WorkerConfig(lease_seconds=3, heartbeat_seconds=1))
    query = (
        "SELECT current_setting('work_mem'), current_setting('maintenance_work_mem'), "
        "current_setting('lock_timeout'), current_setting('statement_timeout')"
    )
    try:
        for lanes in (worker.work_db, worker.renew_db):
            # The worker's own -c settings come last and win over $PGOPTIONS.
            assert lanes.connection().execute(query).fetchone() == ("7MB", "9MB", "300ms", "1s"), lanes.application_name
        assert worker.heartbeat_db.connection().execute(query).fetchone() == ("7MB", "9MB", "500ms", "1s")
    finally:
        for db in (worker.work_db, worker.renew_db, worker.heartbeat_db):
            db.close()


def test_a_forced_stop_in_a_library_leaves_no_thread_or_connection(db_dsn, conn, queue):
    from taskforge.worker import EXIT_FORCED, Worker, WorkerConfig

    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    worker = Worker(
        db_dsn, WorkerConfig(queues=(queue,), concurrency=1, lease_seconds=3, grace_seconds=1, heartbeat_seconds=1)
    )
    task_id = submit(conn, "sleep", {"ms": 300}, queue=queue)
    result: dict = {}
    runner = threading.Thread(
        target=lambda: result.update(rc=worker.run(install_signal_handlers=False)), name="test-worker-run", daemon=True
    )
    locker = None
    try:
        runner.start()
        wait_running(conn, task_id)
        # Its finalize keeps finding the task's row busy until the grace period ends.
        locker = psycopg.connect(db_dsn, application_name="taskforge-test/locker")
        locker.execute("SELECT 1 FROM taskforge.tasks WHERE task_id = %s FOR UPDATE", (task_id,))
        wait_for(
            lambda: worker.busy == 1 and any(r.outcome is not None for r in worker.attempts.snapshot()),
            message="the finalize to start",
        )
        worker.request_stop()
        runner.join(LONG)
        assert not runner.is_alive() and result["rc"] == EXIT_FORCED
        wait_for(lambda: not any(t.is_alive() for t in worker.threads), message="the worker's threads to end")
        wait_for(
            lambda: conn.execute(WORKER_CONNECTIONS, {"since": since}).fetchone()[0] == 0,
            message="the worker's connections to close",
        )
    finally:
        if locker is not None:
            locker.rollback()
            locker.close()
        worker.force_stop()
        runner.join(LONG)
    # Not finalized: the attempt is left to lease expiry and recovery.
    assert history(conn, task_id) == ["RUNNING"]


def test_an_idle_worker_stops_cleanly_while_the_database_refuses_connections(spawn_factory, fresh_database, queue):
    """A stop must not wait for a claim that keeps retrying against a database that is down:
    only finished attempts are worth sending until they land."""
    from taskforge import database as tfdb

    dsn = fresh_database("taskforge_itest_down")
    tfdb.migrate(dsn)
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    spawn = spawn_factory(dsn)
    admin = tfdb.with_dbname(dsn, "postgres")
    with psycopg.connect(dsn, autocommit=True) as conn:
        worker = spawn.worker("--queue", queue, "--poll-seconds", "0.2")
        wait_registered(conn, worker)
    with psycopg.connect(admin, autocommit=True) as conn:
        try:
            conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS false')
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (dbname,))
            wait_log(worker, "claim failed")
            worker.signal(15)
            assert worker.wait(timeout=LONG) == 0, worker.log()[-3000:]
        finally:
            conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS true')
    assert "could not deregister worker" in worker.log()
