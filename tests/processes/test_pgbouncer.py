"""TaskForge through a real PgBouncer 1.18 in transaction mode (``--pooler transaction``).

Each test starts a PgBouncer of its own (taskforge.benchmarks.pgbouncer: a free loopback port,
``pool_mode = transaction``, a pool of N server connections) in front of the test server:

- 1,000 worker slots (10 processes x 100) through a pool of 20 drain E1 and E2 with every trust
  check of the benchmarks, at most 20 server backends, and no prepared-statement error;
- a lock wait of a worker behind the pooler is still cut off by its lock_timeout, and the
  settings of one client's transaction are never seen by the next client of the same server
  connection (a pool of 1);
- the console reads and acts through the pooler without leaving session settings behind;
- ``taskforge bench pooler --quick`` passes its trust checks.

PgBouncer missing (``make test`` installs it: scripts/ensure-pgbouncer.sh) skips them, saying why.
"""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from taskforge import database, pooling
from taskforge.benchmarks import pooler, workloads
from taskforge.benchmarks.pgbouncer import PgBouncer, available
from taskforge.benchmarks.workloads import WorkloadSpec
from taskforge.progress import Progress
from taskforge.worker import DbConnection

from itest_support import ROOT, submit, task, wait_for, wait_log, wait_registered

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(available() is not None, reason=f"PgBouncer cannot run here: {available()}"),
]


def dbname_of(dsn: str) -> str:
    return str(conninfo_to_dict(dsn)["dbname"])


@pytest.fixture()
def bouncer_factory(admin_dsn):
    """``bouncer_factory(pool_size)``: a started PgBouncer in transaction mode; stopped at teardown."""
    started: list[PgBouncer] = []

    def make(pool_size: int) -> PgBouncer:
        bouncer = PgBouncer(admin_dsn, pool_size=pool_size).start()
        started.append(bouncer)
        return bouncer

    yield make
    for bouncer in started:
        if bouncer.directory is not None and bouncer.log_path.exists():
            print(f"----- pgbouncer log\n{bouncer.log_path.read_text()[-3000:]}")
        bouncer.stop()


def test_a_thousand_slots_through_a_pool_of_twenty_drain_e1_and_e2_with_every_trust_check(
    bouncer_factory, fresh_database, tmp_path
):
    bouncer = bouncer_factory(20)
    for workload, task_type, tasks, payload in (("e1", "noop", 2000, {}), ("e2", "sleep", 1000, {"ms": 500})):
        dsn = fresh_database("taskforge_pgbouncer")
        database.migrate(dsn)
        spec = WorkloadSpec(
            workload=f"pooled-{workload}",
            task_type=task_type,
            tasks=tasks,
            workers=10,
            concurrency=100,
            payload=payload,
            warmup=50,
            timeout_seconds=300,
            start_timeout_seconds=120,
            worker_dsn=bouncer.dsn(dbname_of(dsn)),
            pooler=pooling.TRANSACTION,
        )
        with pooler.BackendSampler(dsn, bouncer) as sampler:
            result = workloads.run_trial(dsn, spec, 1, tmp_path, Progress())
        result.checks += pooler.pooled_checks(sampler, 20, tmp_path / result.label)
        failed = [(c.name, c.detail) for c in result.failed_checks()]
        assert result.error is None and not failed, (result.error, failed)
        assert sampler.samples > 0 and 0 < max(sampler.max_backends, sampler.max_servers) <= 20
        assert {c.name for c in result.checks} >= {"server_connections_within_pool", "no_prepared_statement_errors"}
        print(
            f"{workload} through PgBouncer: {result.throughput:,.0f} tasks/s, at most {sampler.max_backends} "
            f"worker backends, {sampler.max_servers} PgBouncer server connections"
        )


def test_a_workers_lock_wait_behind_the_pooler_is_cut_off_by_its_lock_timeout(
    bouncer_factory, spawn_factory, conn, db_dsn, queue
):
    bouncer = bouncer_factory(2)
    spawn = spawn_factory(bouncer.dsn(dbname_of(db_dsn)))
    # lease 5 s: lock_timeout 0.5 s (min(1, lease / 10)), statement_timeout 1.67 s.
    worker = spawn.worker("--queue", queue, "--lease-seconds", "5", "--poll-seconds", "0.2", "--pooler", "transaction")
    worker_id = wait_registered(conn, worker)
    wait_log(worker, "no LISTEN behind a transaction-mode pooler")
    # A transaction holding the worker's own row: every claim needs a key-share lock on it.
    locker = psycopg.connect(db_dsn, application_name="taskforge-test/locker")
    try:
        locker.execute("SELECT 1 FROM taskforge.workers WHERE worker_id = %s FOR UPDATE", (worker_id,))
        task_id = submit(conn, "noop", {}, queue=queue)
        wait_log(worker, "canceling statement due to lock timeout")
        assert task(conn, task_id)["state"] == "QUEUED"
    finally:
        locker.rollback()
        locker.close()
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[worker])
    assert "prepared statement" not in worker.log()


def test_settings_of_one_transaction_are_never_seen_by_the_next_client_of_the_server_connection(
    bouncer_factory, db_dsn
):
    bouncer = bouncer_factory(1)  # one server connection: every client below shares it
    pooled = bouncer.dsn(dbname_of(db_dsn))
    db = DbConnection(pooled, "taskforge-test/pooled", lock_timeout=0.25, statement_timeout=0.5, pooler="transaction")
    other = psycopg.connect(pooled, autocommit=True, prepare_threshold=None)
    try:
        assert db.execute("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')") == [
            ("250ms", "500ms")
        ]
        server_pid = db.execute("SELECT pg_backend_pid()")[0][0]
        row = other.execute(
            "SELECT pg_backend_pid(), current_setting('lock_timeout'), current_setting('statement_timeout')"
        ).fetchone()
        assert row == (server_pid, "0", "0")  # the same server connection, the server's settings
        with pytest.raises(psycopg.errors.QueryCanceled):
            db.execute("SELECT pg_sleep(3)")
        # Statements run more than psycopg's prepare threshold (5) prepare nothing, and each of
        # db's transactions lets the one server connection go: a pipelined settings-and-statement
        # pair (an earlier version) now and then left PgBouncer 1.18 holding it for db, and the
        # other client then failed with query_wait_timeout.
        for n in range(60):
            assert db.execute("SELECT %(n)s::int", {"n": n}) == [(n,)]
            assert other.execute("SELECT %s::int", (n,)).fetchone() == (n,)
        assert other.execute("SELECT count(*) FROM pg_prepared_statements").fetchone() == (0,)
    finally:
        db.close(final=True)
        other.close()


def test_the_console_reads_and_acts_through_the_pooler_and_leaves_no_session_settings(
    bouncer_factory, db_dsn, conn, queue
):
    from taskforge_console import Settings, create_app
    from taskforge_console.state import console

    bouncer = bouncer_factory(1)
    pooled = bouncer.dsn(dbname_of(db_dsn))
    token = "pooled-token-" + "x" * 16
    app = create_app(Settings(dsn=pooled, pooler="transaction", pool_min_size=1, pool_max_size=2, token=token))
    app.config["TESTING"] = True
    bearer = {"Authorization": f"Bearer {token}"}
    try:
        client = app.test_client()
        task_id = submit(conn, "noop", {}, queue=queue)
        for path in ("/api/stats", "/api/queues", "/api/tasks", f"/api/tasks/{task_id}", "/metrics"):
            for _ in range(7):  # past psycopg's prepare threshold
                response = client.get(path, headers=bearer)
                assert response.status_code == 200, (path, response.status_code, response.get_data(as_text=True))
        cancelled = client.post(f"/api/tasks/{task_id}/cancel", json={}, headers=bearer)
        assert cancelled.status_code == 200, cancelled.get_data(as_text=True)
        assert task(conn, task_id)["state"] == "CANCELLED"
        with psycopg.connect(pooled, autocommit=True, prepare_threshold=None) as other:
            assert other.execute(
                "SELECT current_setting('statement_timeout'), current_setting('jit'), current_setting('work_mem'), "
                "(SELECT count(*) FROM pg_prepared_statements)"
            ).fetchone() == ("0", "on", "4MB", 0)
    finally:
        console(app).db.close()


def test_bench_pooler_quick_passes_its_trust_checks(tmp_path, admin_dsn):
    out = tmp_path / "bundle"
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "bench", "pooler", "--quick", "--out", str(out), "--dsn", admin_dsn],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=500,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    trials = [json.loads(p.read_text())["trial"] for p in sorted((out / "trials").glob("*.json"))]
    assert {t["workload"] for t in trials} == {
        f"{w}-{how}" for w in ("pooler-e1", "pooler-e2") for how in ("direct", "pooled")
    }
    for trial in trials:
        assert trial["ok"], (trial["workload"], trial.get("error"), trial["checks"])
    pooled = [t for t in trials if t["workload"].endswith("-pooled")]
    assert all(
        {"server_connections_within_pool", "no_prepared_statement_errors"} <= {c["name"] for c in t["checks"]}
        for t in pooled
    )
    rows = json.loads((out / "summary.json").read_text())["pooler"]
    assert [r["workload"] for r in rows] == ["pooler-e1", "pooler-e2"]
    assert all(r["pooled_over_direct"] for r in rows)
    assert "## Through PgBouncer in transaction mode" in (out / "report.md").read_text()


def test_the_pooler_option_refuses_an_unknown_mode_naming_it():
    with pytest.raises(ValueError, match="pooler: must be one of none, transaction, got 'statement'"):
        pooling.resolve_pooler("statement")
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "worker", "--pooler", "statement", "--dsn", "host=127.0.0.1 port=1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2 and "--pooler" in proc.stderr, proc.stderr


def test_waiting_for_a_task_through_the_pooler_polls_and_leaves_no_listen_on_the_server_connection(
    bouncer_factory, db_dsn, conn, queue, monkeypatch
):
    import threading

    from taskforge import client

    monkeypatch.setenv(pooling.POOLER_ENV, pooling.TRANSACTION)
    bouncer = bouncer_factory(1)
    pooled = bouncer.dsn(dbname_of(db_dsn))
    task_id = submit(conn, "noop", {}, queue=queue)  # no worker: it stays QUEUED
    outcome: list[BaseException] = []

    def wait() -> None:
        with psycopg.connect(pooled, autocommit=True, prepare_threshold=None) as waiter:
            try:
                client.wait(waiter, task_id, timeout=1.5, poll_interval=0.1)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                outcome.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    channels = []
    with psycopg.connect(pooled, autocommit=True, prepare_threshold=None) as other:
        while thread.is_alive():
            channels += [r[0] for r in other.execute("SELECT pg_listening_channels()").fetchall()]
    thread.join()
    assert len(outcome) == 1 and isinstance(outcome[0], TimeoutError), outcome
    assert channels == []  # the one server connection, shared with the waiter, never LISTENed
    # Cancelled meanwhile, a new wait finds the task terminal on its first read.
    conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (task_id,))
    with psycopg.connect(pooled, autocommit=True, prepare_threshold=None) as waiter:
        assert client.wait(waiter, task_id, timeout=5, poll_interval=0.1).state == "CANCELLED"
