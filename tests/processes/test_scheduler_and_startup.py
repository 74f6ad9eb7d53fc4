"""Scheduler processes (retries, recovery deadlines, retention) and how processes refuse to start."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import psycopg
import pytest

from taskforge import database as tfdb

from itest_support import (
    LONG,
    ROOT,
    TEST_HANDLERS,
    all_in,
    attempts,
    submit,
    task,
    wait_for,
    wait_log,
    wait_registered,
    wait_running,
)

pytestmark = pytest.mark.timeout(300)


def test_fail_once_batch_gives_exactly_failed_then_succeeded_for_every_task(spawn, conn, queue, test_task_types):
    # itest.fail_once: the built-in fail_once handler under a type with a fixed 100 ms backoff.
    for _ in range(2):
        spawn.scheduler()  # two schedulers side by side
    workers = [
        spawn.worker("--queue", queue, "--import", str(TEST_HANDLERS), "--log-level", "INFO", name=f"{queue}-w{i}")
        for i in range(2)
    ]
    for worker in workers:
        wait_registered(conn, worker)
    task_ids = [submit(conn, "itest.fail_once", {"n": i}, queue=queue) for i in range(50)]
    wait_for(
        lambda: all_in(conn, task_ids, {"SUCCEEDED", "FAILED", "CANCELLED"}), message="the batch to end", procs=workers
    )
    rows = conn.execute(
        "SELECT task_id, array_agg(state ORDER BY attempt_number), array_agg(outcome ORDER BY attempt_number), "
        "       array_agg(attempt_number ORDER BY attempt_number) "
        "  FROM taskforge.tf_attempts WHERE task_id = ANY(%s) GROUP BY task_id",
        (task_ids,),
    ).fetchall()
    assert len(rows) == 50
    for task_id, states, outcomes, numbers in rows:
        assert (states, outcomes, numbers) == (["FAILED", "SUCCEEDED"], ["retryable", "succeeded"], [1, 2]), task_id
    assert all_in(conn, task_ids, {"SUCCEEDED"})


def test_scheduler_wakes_at_the_lease_deadline_not_at_its_max_interval(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, "--lease-seconds", "4", name=f"{queue}-w")
    wait_registered(conn, worker)
    task_id = submit(conn, "sleep", {"ms": 60000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[worker])
    wait_log(worker, f"claimed task {task_id} attempt 1")
    worker.signal(signal.SIGKILL)
    worker.wait(30)
    # With a 120 s maximum interval the lease is recovered in time only because the scheduler
    # sleeps until next_lease_expiry (computed by the database).
    spawn.scheduler("--max-interval-seconds", "120")
    wait_for(
        lambda: [a["state"] for a in attempts(conn, task_id)] == ["ABANDONED"],
        timeout=60,
        message="the expired lease to be recovered",
    )
    lag = attempts(conn, task_id)[0]["recovery_lag_seconds"]
    assert 0 <= lag < 30, lag
    print(f"recovery lag after lease expiry: {lag * 1000:.1f} ms")


def test_scheduler_reconnects_after_its_connection_is_terminated(spawn, conn, queue):
    started = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    scheduler = spawn.scheduler()
    # Only this test's scheduler: connections that began after it was started.
    backends = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        f"AND application_name = 'taskforge-scheduler' AND backend_start > '{started.isoformat()}'"
    )
    wait_for(lambda: conn.execute(backends).fetchall(), message="the scheduler to connect", procs=[scheduler])
    # Past its start-up checks (a connection lost during them ends the process, exit 4, by design):
    # the loss must come inside the loop.
    wait_log(scheduler, "scheduler started")
    assert (
        conn.execute(f"SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM ({backends}) b").fetchone()[0] == 1
    )
    wait_log(scheduler, "reconnected to the database (taskforge-scheduler)")

    worker = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-w")
    wait_registered(conn, worker)
    task_id = submit(conn, "sleep", {"ms": 60000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[worker])
    wait_log(worker, f"claimed task {task_id} attempt 1")
    worker.signal(signal.SIGKILL)
    wait_for(
        lambda: [a["state"] for a in attempts(conn, task_id)] == ["ABANDONED"],
        message="the reconnected scheduler to recover the lease",
        procs=[scheduler],
    )
    assert task(conn, task_id)["state"] == "QUEUED"


def migrated(fresh_database) -> str:
    dsn = fresh_database("taskforge_itest")
    tfdb.migrate(dsn)
    return dsn


@pytest.mark.parametrize(
    ("retention", "said"),
    [(("--retain-days", "0.00001"), "1e-05 day(s)"), (("--retain-seconds", "0.864"), "0.864 s")],
    ids=["days", "seconds"],
)
def test_scheduler_prunes_finished_history_with_retain_days(fresh_database, spawn_factory, retention, said):
    """--retain-days and --retain-seconds (the same retention, 0.864 s) prune the same history."""
    dsn = migrated(fresh_database)
    spawn = spawn_factory(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        done = [submit(c, "noop", queue="prune") for _ in range(5)]
        waiting = submit(c, "noop", queue="prune-later")
        worker = spawn.worker("--queue", "prune", name="pruner-w")
        wait_for(lambda: all_in(c, done, {"SUCCEEDED"}), message="the tasks to succeed", procs=[worker])
        # The records of a worker and a scheduler process that stopped.
        gone_worker = c.execute("SELECT taskforge.tf_register_worker(name => 'gone-w')").fetchone()[0]
        c.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (gone_worker,))
        c.execute("SELECT taskforge.tf_scheduler_heartbeat(gen_random_uuid(), 'gone-s', stopping => true)")
        # Old enough by database time for a retention of 1e-5 days (0.864 s).
        wait_for(
            lambda: c.execute(
                "SELECT max(finished_at) < clock_timestamp() - interval '2 seconds' FROM taskforge.tasks"
            ).fetchone()[0],
            message="the history to age",
        )
        scheduler = spawn.scheduler(*retention, "--batch-size", "2", "--name", "pruner-s")
        wait_for(
            lambda: (
                c.execute("SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s)", (done,)).fetchone()[0] == 0
            ),
            message="the history to be pruned",
            procs=[scheduler],
        )
        assert c.execute("SELECT count(*) FROM taskforge.attempts WHERE task_id = ANY(%s)", (done,)).fetchone()[0] == 0
        assert task(c, waiting)["state"] == "QUEUED"  # live work is never pruned
        wait_log(scheduler, f"pruned 5 terminal task(s) finished more than {said} ago")
        # Then the records of the processes that are gone; live processes stay.
        wait_log(scheduler, f"pruned the records of 1 worker(s) and 1 scheduler(s) gone more than {said} ago")
        assert [r[0] for r in c.execute("SELECT name FROM taskforge.workers").fetchall()] == ["pruner-w"]
        assert [r[0] for r in c.execute("SELECT name FROM taskforge.schedulers").fetchall()] == ["pruner-s"]
        scheduler.signal(signal.SIGTERM)
        assert scheduler.wait(LONG) == 0
        assert "scheduler stopped" in scheduler.log()


def run_cli(dsn: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {"TASKFORGE_DSN": dsn, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "clients" / "python")}
    return subprocess.run(
        [sys.executable, "-m", "taskforge.cli", *args],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scheduler_rows(c: psycopg.Connection) -> dict[str, tuple]:
    rows = c.execute("SELECT name, liveness, last_heartbeat_at, pid FROM taskforge.tf_schedulers").fetchall()
    return {name: (liveness, beat, pid) for name, liveness, beat, pid in rows}


def test_scheduler_beats_in_tf_schedulers_and_healthcheck_follows(fresh_database, spawn_factory):
    """A real scheduler records itself in tf_schedulers and beats every --heartbeat-seconds even
    when its passes may sleep longer; killed, it turns stale; stopped cleanly, stopped. The probe
    (`python -m taskforge.cli healthcheck`) follows each change."""
    dsn = migrated(fresh_database)
    spawn = spawn_factory(dsn)
    done = run_cli(dsn, "healthcheck")
    assert done.returncode == 1 and "scheduler: no scheduler alive: none has run" in done.stderr, done.stderr

    args = ("--heartbeat-seconds", "1", "--max-interval-seconds", "60")
    doomed = spawn.scheduler(*args, "--name", "probe-doomed", name="probe-doomed")
    with psycopg.connect(dsn, autocommit=True) as c:
        wait_for(lambda: "probe-doomed" in scheduler_rows(c), message="the first beat", procs=[doomed])
        liveness, first, pid = scheduler_rows(c)["probe-doomed"]
        assert liveness == "alive" and pid == doomed.pid
        # Beats keep coming although an idle pass may sleep up to 60 s.
        wait_for(lambda: scheduler_rows(c)["probe-doomed"][1] > first, timeout=10, message="a second beat")
        done = run_cli(dsn, "healthcheck")
        assert done.returncode == 0 and "scheduler 1 alive (probe-doomed beat" in done.stdout, done.stderr

        doomed.kill()
        wait_for(lambda: scheduler_rows(c)["probe-doomed"][0] == "stale", timeout=20, message="three missed beats")
        done = run_cli(dsn, "healthcheck", "--json")
        assert done.returncode == 1
        assert json.loads(done.stdout)["checks"]["scheduler"]["stale"] == 1

        clean = spawn.scheduler(*args, "--name", "probe-clean", name="probe-clean")
        wait_for(lambda: "probe-clean" in scheduler_rows(c), message="the new scheduler's first beat", procs=[clean])
        assert run_cli(dsn, "healthcheck").returncode == 0
        clean.signal(signal.SIGTERM)
        assert clean.wait(LONG) == 0
        assert scheduler_rows(c)["probe-clean"][0] == "stopped"
        done = run_cli(dsn, "healthcheck")
        assert done.returncode == 1 and "(1 stale, 1 stopped)" in done.stderr, done.stderr


def test_worker_and_scheduler_refuse_a_newer_schema_version(fresh_database):
    from taskforge.worker import SchemaVersionError, Worker, check_schema

    dsn = migrated(fresh_database)
    with psycopg.connect(dsn, autocommit=True) as c:
        assert check_schema(c) == 1
        c.execute(
            "CREATE OR REPLACE FUNCTION taskforge.tf_schema_version() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 2'"
        )
        with pytest.raises(SchemaVersionError, match="version 2, newer than version 1"):
            check_schema(c)
    with pytest.raises(SchemaVersionError):
        Worker(dsn).run(install_signal_handlers=False)

    for command in ("worker", "scheduler"):
        done = run_cli(dsn, command)
        assert done.returncode == 4, (command, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert lines[-1].startswith("taskforge: the database has TaskForge SQL API version 2, newer than version 1")
        assert "Traceback" not in done.stderr
    with psycopg.connect(dsn, autocommit=True) as c:
        # Refused before registering: no worker row was written.
        assert c.execute("SELECT count(*) FROM taskforge.workers").fetchone()[0] == 0


def test_worker_refuses_to_start_without_a_schema_or_with_bad_options(fresh_database):
    empty = fresh_database("taskforge_itest_empty")
    done = run_cli(empty, "worker")
    assert done.returncode == 4 and "schema taskforge is not installed" in done.stderr, done.stderr

    dsn = migrated(fresh_database)
    done = run_cli(dsn, "worker", "--task-type", "resize_image")
    assert done.returncode == 2 and "resize_image: no handler registered" in done.stderr, done.stderr
    done = run_cli(dsn, "worker", "--import", "no_such_module_for_taskforge")
    assert done.returncode == 2 and "--import no_such_module_for_taskforge: ModuleNotFoundError" in done.stderr
    done = run_cli(dsn, "worker", "--queue", "bad queue!")
    assert done.returncode == 2 and "queue" in done.stderr
    assert "Traceback" not in done.stderr
