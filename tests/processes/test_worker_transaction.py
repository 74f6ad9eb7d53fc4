"""Finalizing in the handler's own transaction (``ctx.transaction()``), with real worker processes:
the handler's row is there if and only if the task SUCCEEDED, whatever happens around the COMMIT.

The handlers (tests/helpers/itest_tx_handlers.py) write one row into ``public.itest_tx_rows``
inside the block and can hold, on a chosen attempt, inside the block (after the INSERT, before
tf_finalize) or after it (once committed), until a release file appears: the test kills or
pauses the worker at exactly that point. A deferred constraint trigger holds a COMMIT itself
(after tf_finalize ran in the transaction) on an advisory lock the test keeps.
"""

from __future__ import annotations

import json
import signal
import time

import psycopg
import pytest

from itest_support import (
    TX_TEST_HANDLERS,
    attempts,
    history,
    task,
    wait_for,
    wait_log,
    wait_registered,
    wait_running,
)

pytestmark = pytest.mark.timeout(300)

#: The advisory lock key the trigger of tag ``hold-commit`` waits for at COMMIT.
HOLD_COMMIT_KEY = 160_416
SYNC, ASYNC = "itest.tx_write", "itest.async_tx_write"


@pytest.fixture()
def tx_rows(db_dsn, test_task_types):
    """``public.itest_tx_rows`` (kept across tests: each reads its own task ids) and the deferred
    trigger that makes attempt 1 of a row tagged ``hold-commit`` wait at COMMIT for
    :data:`HOLD_COMMIT_KEY`."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute(
            "CREATE TABLE IF NOT EXISTS public.itest_tx_rows (id bigserial PRIMARY KEY, task_id bigint NOT NULL, "
            "attempt_number int NOT NULL, tag text)"
        )
        c.execute(
            "CREATE OR REPLACE FUNCTION public.itest_hold_commit() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$BEGIN PERFORM pg_advisory_xact_lock({HOLD_COMMIT_KEY}); RETURN NULL; END$$"
        )
        c.execute("DROP TRIGGER IF EXISTS itest_hold_commit ON public.itest_tx_rows")
        c.execute(
            "CREATE CONSTRAINT TRIGGER itest_hold_commit AFTER INSERT ON public.itest_tx_rows "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            "WHEN (NEW.tag = 'hold-commit' AND NEW.attempt_number = 1) EXECUTE FUNCTION public.itest_hold_commit()"
        )


def submit(conn, task_type: str, payload: dict, *, queue: str, max_attempts: int = 3, timeout: float | None = None):
    return conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %s, payload => %s::jsonb, queue => %s, "
        "max_attempts => %s, timeout_seconds => %s)",
        (task_type, json.dumps(payload), queue, max_attempts, timeout),
    ).fetchone()[0]


def rows(conn, task_id: int) -> list[tuple[int, str | None]]:
    """The committed rows of a task: (attempt_number, tag)."""
    return conn.execute(
        "SELECT attempt_number, tag FROM public.itest_tx_rows WHERE task_id = %s ORDER BY id", (task_id,)
    ).fetchall()


def tx_worker(spawn, queue: str, *args: str, name: str, env: dict | None = None, log_level: str = "DEBUG"):
    return spawn.worker(
        "--queue", queue, "--import", str(TX_TEST_HANDLERS), *args, name=name, env=env, log_level=log_level
    )


def hold(tmp_path, at: str, *, attempt: int = 1, release: bool = False) -> dict:
    return {
        "attempt": attempt,
        "at": at,
        "marker": str(tmp_path / f"held-{at}"),
        "release": str(tmp_path / f"release-{at}") if release else None,
    }


def wait_file(path: str, procs=()) -> str:
    from pathlib import Path

    return wait_for(lambda: Path(path).exists() and Path(path).read_text(), message=f"{path} to appear", procs=procs)


@pytest.mark.parametrize("task_type", [SYNC, ASYNC])
def test_the_rows_commit_with_the_success_and_the_worker_claims_on(spawn, conn, queue, tx_rows, task_type):
    worker = tx_worker(spawn, queue, name=f"{queue}-w", log_level="INFO")
    worker_id = wait_registered(conn, worker)
    ids = [submit(conn, task_type, {"tag": f"t{i}"}, queue=queue) for i in range(3)]
    echo = submit(conn, "echo", {"n": 1}, queue=queue)  # a plain handler after them
    wait_for(
        lambda: all(task(conn, t)["state"] == "SUCCEEDED" for t in [*ids, echo]),
        message="every task to succeed",
        procs=[worker],
    )
    for i, task_id in enumerate(ids):
        assert rows(conn, task_id) == [(1, f"t{i}")]
        assert task(conn, task_id)["result"] == {"wrote": [task_id, 1]}
        (only,) = attempts(conn, task_id)
        assert (only["state"], str(only["worker_id"]), only["result"]) == (
            "SUCCEEDED",
            worker_id,
            {"wrote": [task_id, 1]},
        )
    log = worker.log()
    for task_id in ids:
        assert f"finalized task {task_id} attempt 1 in the handler's transaction: succeeded -> task SUCCEEDED" in log
    assert f"finalized task {echo} attempt 1: succeeded -> task SUCCEEDED" in log
    assert "WARNING" not in log, log
    # The pool's connections are the worker's own, named for what they are.
    pool = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'taskforge-worker/transaction' "
        "AND datname = current_database()"
    ).fetchone()[0]
    assert pool == 1  # concurrency 1: a pool of at most one connection (per kind of handler)


@pytest.mark.parametrize("task_type", [SYNC, ASYNC])
def test_an_error_in_the_block_rolls_its_rows_back_and_fails_the_attempt(spawn, conn, queue, tx_rows, task_type):
    worker = tx_worker(spawn, queue, name=f"{queue}-w")
    wait_registered(conn, worker)
    raised = submit(conn, task_type, {"tag": "raised", "fail": "inside"}, queue=queue, max_attempts=1)
    bad_result = submit(conn, task_type, {"tag": "nan", "fail": "result"}, queue=queue, max_attempts=1)
    wait_for(
        lambda: all(task(conn, t)["state"] == "FAILED" for t in (raised, bad_result)),
        message="both tasks to fail",
        procs=[worker],
    )
    assert rows(conn, raised) == [] and rows(conn, bad_result) == []
    assert history(conn, raised) == ["FAILED"] and history(conn, bad_result) == ["FAILED"]
    error = task(conn, raised)["last_error"]
    assert (error["type"], error["message"]) == ("ValueError", "raised inside the transaction block")
    error = task(conn, bad_result)["last_error"]
    assert error["type"] == "taskforge.handlers.ResultError" and "NaN" in error["message"], error
    # Both ended through the worker's usual finalize, not the transaction's.
    assert "in the handler's transaction" not in worker.log()


def test_sigkill_inside_the_block_leaves_no_row_and_the_task_runs_again_once(spawn, conn, queue, tx_rows, tmp_path):
    spawn.scheduler()
    victim = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-victim")
    wait_registered(conn, victim)
    task_id = submit(conn, SYNC, {"tag": "once", "hold": hold(tmp_path, "inside")}, queue=queue)
    wait_file(str(tmp_path / "held-inside"), procs=[victim])  # its row is inserted, not committed
    victim.signal(signal.SIGKILL)
    assert victim.wait(30) == -signal.SIGKILL
    assert rows(conn, task_id) == []

    rescuer = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-rescuer")
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[rescuer])
    assert rows(conn, task_id) == [(2, "once")]
    assert [(a["state"], a["outcome"]) for a in attempts(conn, task_id)] == [
        ("ABANDONED", "lease_expired"),
        ("SUCCEEDED", "succeeded"),
    ]


@pytest.mark.parametrize("server_notices", [True, False], ids=["commit-aborted", "commit-completed"])
def test_sigkill_during_the_commit_leaves_one_row_for_one_success(spawn, conn, queue, tx_rows, db_dsn, server_notices):
    """The worker dies while its COMMIT (tf_finalize already ran in the transaction) waits in a
    deferred trigger. A server that checks the client's socket aborts the transaction (no row,
    the task runs again); one that does not completes the COMMIT once the trigger goes on (the
    dead worker's success stands, the task never runs again). Either way: one row, one success."""
    spawn.scheduler()
    env = {"PGOPTIONS": "-c client_connection_check_interval=100"} if server_notices else None
    with psycopg.connect(db_dsn, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (HOLD_COMMIT_KEY,))
        victim = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-victim", env=env)
        wait_registered(conn, victim)
        task_id = submit(conn, SYNC, {"tag": "hold-commit"}, queue=queue)
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'taskforge-worker/transaction' "
                    "AND datname = current_database() AND wait_event = 'advisory' AND query = 'COMMIT'"
                ).fetchone()[0]
                == 1
            ),
            message="the worker's COMMIT to wait in the trigger",
            procs=[victim],
        )
        assert task(conn, task_id)["state"] == "RUNNING"  # tf_finalize's writes are not committed yet
        victim.signal(signal.SIGKILL)
        assert victim.wait(30) == -signal.SIGKILL
        if server_notices:
            wait_for(
                lambda: (
                    conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'taskforge-worker/transaction' "
                        "AND datname = current_database()"
                    ).fetchone()[0]
                    == 0
                ),
                message="the server to end the dead worker's transaction",
            )
        gate.execute("SELECT pg_advisory_unlock(%s)", (HOLD_COMMIT_KEY,))

    rescuer = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-rescuer")
    wait_registered(conn, rescuer)
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[rescuer])
    if server_notices:
        assert rows(conn, task_id) == [(2, "hold-commit")]
        assert history(conn, task_id) == ["ABANDONED", "SUCCEEDED"]
    else:
        time.sleep(4)  # two leases: had the success not stood, recovery and the rescuer would act
        assert rows(conn, task_id) == [(1, "hold-commit")]
        assert history(conn, task_id) == ["SUCCEEDED"]
        assert f"claimed task {task_id}" not in rescuer.log()


def test_sigkill_after_the_commit_leaves_the_task_succeeded_and_never_runs_it_again(
    spawn, conn, queue, tx_rows, tmp_path
):
    spawn.scheduler()
    victim = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-victim")
    wait_registered(conn, victim)
    task_id = submit(conn, SYNC, {"tag": "done", "hold": hold(tmp_path, "after")}, queue=queue)
    wait_file(str(tmp_path / "held-after"), procs=[victim])  # committed; the handler has not returned
    assert task(conn, task_id)["state"] == "SUCCEEDED"
    time.sleep(1.5)  # renewals of the finished attempt are refused: not a lost lease to report
    victim.signal(signal.SIGKILL)
    assert victim.wait(30) == -signal.SIGKILL
    assert "lease lost" not in victim.log()

    other = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-other")
    wait_registered(conn, other)
    time.sleep(4)  # two leases: recovery and the other worker had every chance to act
    assert task(conn, task_id)["state"] == "SUCCEEDED"
    assert task(conn, task_id)["result"] == {"wrote": [task_id, 1]}
    assert rows(conn, task_id) == [(1, "done")]
    assert history(conn, task_id) == ["SUCCEEDED"]
    assert f"claimed task {task_id}" not in other.log()


@pytest.mark.parametrize("task_type", [SYNC, ASYNC])
def test_a_lease_lost_inside_the_block_refuses_the_success_and_rolls_back(
    spawn, conn, queue, tx_rows, tmp_path, task_type
):
    spawn.scheduler()
    paused = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-paused")
    wait_registered(conn, paused)
    report = tmp_path / "report"
    payload = {"tag": "lost", "hold": hold(tmp_path, "inside", release=True), "report": str(report)}
    task_id = submit(conn, task_type, payload, queue=queue)
    wait_file(str(tmp_path / "held-inside"), procs=[paused])
    paused.signal(signal.SIGSTOP)  # a long pause while the transaction is open
    try:
        other = tx_worker(spawn, queue, "--lease-seconds", "2", name=f"{queue}-other")
        wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="attempt 2 to succeed", procs=[other])
    finally:
        paused.signal(signal.SIGCONT)
    wait_log(paused, f"lease lost for task {task_id} attempt 1")
    (tmp_path / "release-inside").write_text("go")
    assert json.loads(wait_file(f"{report}-1.json")) == {"refused": "not_running"}
    assert json.loads(wait_file(f"{report}-2.json")) == {"committed": True}
    wait_log(paused, f"did not accept the succeeded outcome of task {task_id} attempt 1: not_running")
    assert rows(conn, task_id) == [(2, "lost")]  # attempt 1's row was rolled back
    assert [(a["state"], a["worker_name"]) for a in attempts(conn, task_id)] == [
        ("ABANDONED", f"{queue}-paused"),
        ("SUCCEEDED", f"{queue}-other"),
    ]
    # The refused attempt left the worker, which claims on.
    echo = submit(conn, "echo", {}, queue=queue)
    wait_for(lambda: task(conn, echo)["state"] == "SUCCEEDED", message="another task to succeed")
    assert paused.alive()


def test_a_deadline_passed_inside_the_block_refuses_the_success_and_rolls_back(spawn, conn, queue, tx_rows, tmp_path):
    worker = tx_worker(spawn, queue, name=f"{queue}-w")
    wait_registered(conn, worker)
    report = tmp_path / "report"
    payload = {"tag": "late", "hold": hold(tmp_path, "inside", release=True), "report": str(report)}
    task_id = submit(conn, SYNC, payload, queue=queue, max_attempts=1, timeout=1)
    wait_running(conn, task_id, 1, procs=[worker])
    wait_file(str(tmp_path / "held-inside"), procs=[worker])
    wait_for(
        lambda: conn.execute(
            "SELECT clock_timestamp() > deadline_at FROM taskforge.tasks WHERE task_id = %s", (task_id,)
        ).fetchone()[0],
        message="the attempt's deadline to pass",
    )
    (tmp_path / "release-inside").write_text("go")
    assert json.loads(wait_file(f"{report}-1.json")) == {"refused": "timed_out"}
    wait_log(
        worker, f"did not accept the succeeded outcome of task {task_id} attempt 1: the attempt passed its deadline"
    )
    assert rows(conn, task_id) == []
    spawn.scheduler()  # recovery records the attempt timed_out; no attempt is left
    wait_for(lambda: task(conn, task_id)["state"] == "FAILED", message="the task to fail")
    assert [(a["state"], a["outcome"]) for a in attempts(conn, task_id)] == [("ABANDONED", "timed_out")]
    assert rows(conn, task_id) == []
