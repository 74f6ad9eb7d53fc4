"""The worker as a real process: crashes, signals, leases, concurrency, cancellation, errors."""

from __future__ import annotations

import json
import signal

import pytest

from itest_support import (
    LONG,
    ROOT,
    TEST_HANDLERS,
    all_in,
    attempts,
    history,
    submit,
    task,
    wait_for,
    wait_log,
    wait_registered,
    wait_running,
    worker_row,
)

pytestmark = pytest.mark.timeout(300)


def test_sigkill_mid_task_is_recovered_after_the_lease_and_succeeds_on_attempt_2(spawn, conn, queue):
    spawn.scheduler()
    victim = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-victim")
    victim_id = wait_registered(conn, victim)
    task_id = submit(conn, "sleep", {"ms": 3000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[victim])
    wait_log(victim, f"claimed task {task_id} attempt 1")
    victim.signal(signal.SIGKILL)
    assert victim.wait(30) == -signal.SIGKILL

    rescuer = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-rescuer")
    rescuer_id = wait_registered(conn, rescuer)
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[rescuer])

    rows = attempts(conn, task_id)
    assert [(a["attempt_number"], a["state"]) for a in rows] == [(1, "ABANDONED"), (2, "SUCCEEDED")]
    assert str(rows[0]["worker_id"]) == victim_id and rows[0]["outcome"] == "lease_expired"
    assert str(rows[1]["worker_id"]) == rescuer_id
    # Recovered only after the lease expired (database time), never before.
    assert rows[0]["abandoned_at"] >= rows[0]["lease_expires_at"]
    assert rows[0]["recovery_lag_seconds"] >= 0
    print(f"recovery lag after lease expiry: {rows[0]['recovery_lag_seconds'] * 1000:.1f} ms")


def test_sigterm_lets_running_handlers_finish_claims_nothing_new_and_deregisters(spawn, conn, queue):
    spawn.scheduler()
    # Lease 2 s < handler 4 s: the attempts only survive if renewals continue during the grace period.
    worker = spawn.worker("--queue", queue, "--concurrency", "2", "--lease-seconds", "2", name=f"{queue}-w")
    worker_id = wait_registered(conn, worker)
    long_ids = [submit(conn, "sleep", {"ms": 4000}, queue=queue) for _ in range(2)]
    for task_id in long_ids:
        wait_running(conn, task_id, 1, procs=[worker])
    # Both slots are busy; these wait. After SIGTERM the worker must not claim them.
    waiting_ids = [submit(conn, "noop", queue=queue) for _ in range(3)]
    wait_log(worker, f"claimed task {long_ids[1]} attempt 1")

    worker.signal(signal.SIGTERM)
    assert worker.wait(LONG) == 0, worker.log()

    for task_id in long_ids:
        assert history(conn, task_id) == ["SUCCEEDED"]
        assert task(conn, task_id)["state"] == "SUCCEEDED"
    for task_id in waiting_ids:
        row = task(conn, task_id)
        assert (row["state"], row["attempt_count"]) == ("QUEUED", 0)
    row = worker_row(conn, f"{queue}-w")
    assert str(row["worker_id"]) == worker_id and row["liveness"] == "stopped"
    log = worker.log()
    assert "SIGTERM received" in log and "deregistered" in log
    assert "lease lost" not in log
    assert log.count("claimed task") == 2


@pytest.mark.parametrize("how", ["grace_period_over", "second_signal"])
def test_forced_stop_exits_without_finalizing_and_the_lease_expires(spawn, conn, queue, how):
    spawn.scheduler()
    grace = "1" if how == "grace_period_over" else "600"
    worker = spawn.worker("--queue", queue, "--lease-seconds", "3", "--grace-seconds", grace, name=f"{queue}-w")
    wait_registered(conn, worker)
    task_id = submit(conn, "sleep", {"ms": 60000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[worker])
    wait_log(worker, f"claimed task {task_id} attempt 1")

    worker.signal(signal.SIGTERM)
    if how == "second_signal":
        wait_log(worker, "SIGTERM received")
        worker.signal(signal.SIGINT)
    assert worker.wait(LONG) == 1, worker.log()
    assert f"{task_id}/1" in worker.log()  # the unfinished attempt is named in the log

    # Nobody finalized it: the lease runs out and the scheduler requeues the task.
    wait_for(lambda: history(conn, task_id) == ["ABANDONED"], message="the attempt to be abandoned")
    row = task(conn, task_id)
    assert row["state"] == "QUEUED" and row["attempt_count"] == 1
    assert worker_row(conn, f"{queue}-w")["liveness"] == "stopped"


def test_handler_that_outlives_its_lease_keeps_the_task_while_renewals_run(spawn, conn, queue):
    spawn.scheduler()
    owner = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-owner")
    wait_registered(conn, owner)
    task_id = submit(conn, "sleep", {"ms": 7000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[owner])
    # A second idle worker on the same queue would take the task if the lease ever lapsed.
    thief = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-thief")
    wait_registered(conn, thief)

    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the task to succeed", procs=[owner, thief])
    rows = attempts(conn, task_id)
    assert [(a["attempt_number"], a["state"], a["worker_name"]) for a in rows] == [(1, "SUCCEEDED", f"{queue}-owner")]
    assert rows[0]["duration_seconds"] >= 7.0  # it really slept 3.5 leases long
    assert "claimed task" not in thief.log()
    assert "lease lost" not in owner.log()


def test_concurrency_claims_only_for_free_slots(spawn, conn, queue):
    task_ids = [submit(conn, "sleep", {"ms": 1500}, queue=queue) for _ in range(7)]
    worker = spawn.worker("--queue", queue, "--concurrency", "3", name=f"{queue}-w")
    wait_registered(conn, worker)
    seen = []

    def done() -> bool:
        running = conn.execute(
            "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = 'RUNNING'", (task_ids,)
        ).fetchone()[0]
        seen.append(running)
        return all_in(conn, task_ids, {"SUCCEEDED"})

    wait_for(done, message="all tasks to succeed", procs=[worker], interval=0.02)
    assert max(seen) == 3, seen
    assert all(history(conn, t) == ["SUCCEEDED"] for t in task_ids)


def test_cancel_reaches_a_running_handler_through_renewals(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, "--lease-seconds", "1.5", name=f"{queue}-w")
    wait_registered(conn, worker)
    task_id = submit(conn, "sleep", {"ms": 60000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[worker])
    assert conn.execute(
        "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %s)", (task_id,)
    ).fetchone() == ("RUNNING", True)
    # The next renewal (every 0.5 s) sets ctx.cancel_requested; the sleep handler stops.
    wait_for(lambda: task(conn, task_id)["state"] == "CANCELLED", message="the task to be cancelled", procs=[worker])
    rows = attempts(conn, task_id)
    assert [(a["state"], a["outcome"]) for a in rows] == [("CANCELLED", "cancelled")]
    assert rows[0]["duration_seconds"] < 50
    assert "cancel requested" in worker.log()


def test_errors_and_results_that_postgres_cannot_store_end_as_clear_failures(spawn, conn, queue, test_task_types):
    worker = spawn.worker("--queue", queue, "--import", str(TEST_HANDLERS), name=f"{queue}-w")
    wait_registered(conn, worker)
    nasty = submit(conn, "itest.nasty_error", queue=queue)
    nan = submit(conn, "itest.nan_result", queue=queue)
    nul = submit(conn, "itest.nul_result", queue=queue)
    deep = submit(conn, "itest.deep_result", queue=queue)
    report = submit(conn, "itest.sleep_report", {"ms": 10}, queue=queue, priority=5, max_attempts=4)
    ids = [nasty, nan, nul, deep, report]
    wait_for(lambda: all_in(conn, ids, {"SUCCEEDED", "FAILED"}), message="all tasks to end", procs=[worker])

    row = task(conn, nasty)
    assert row["state"] == "FAILED" and history(conn, nasty) == ["FAILED"]
    error = row["last_error"]
    text = json.dumps(error, ensure_ascii=False)
    assert error["type"] == "ValueError"
    assert error["message"].startswith("startnul  lone-high  lone-low x")
    assert "\x00" not in text and "\\u0000" not in text
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
    assert error["truncated"] is True and len(text.encode()) <= 16 * 1024
    assert "nasty_error" in error["traceback"]

    for task_id, needle in ((nan, "NaN and Infinity are not allowed"), (nul, "NUL characters")):
        row = task(conn, task_id)
        assert row["state"] == "FAILED", row
        assert row["last_error"]["type"] == "taskforge.ResultError"
        assert needle in row["last_error"]["message"]

    # Refused by the database (TF400, results nested over 100 levels): the attempt fails saying why.
    row = task(conn, deep)
    assert row["state"] == "FAILED" and history(conn, deep) == ["FAILED"], row
    assert "must be nested at most 100 levels deep" in row["last_error"]["message"], row["last_error"]

    row = task(conn, report)
    assert row["state"] == "SUCCEEDED"
    assert row["result"] == {
        "fencing_token": [report, 1],
        "cancel_requested": False,
        "lease_lost": False,
        "queue": queue,
        "priority": 5,
        "max_attempts": 4,
    }


def test_documented_handler_example_runs_as_written(spawn, conn, queue, tmp_path, test_task_types):
    out = tmp_path / "out"
    # docs/worker.md: taskforge worker --import examples/handlers_example.py --queue examples
    worker = spawn.worker(
        "--import",
        "examples/handlers_example.py",
        "--queue",
        queue,
        name=f"{queue}-w",
        env={"WORD_COUNT_OUTPUT_DIR": str(out)},
    )
    wait_registered(conn, worker)
    spawn.scheduler()
    plain = submit(conn, "word_count", {"text": "To be, or not to be: that is the question."}, queue=queue)
    flaky = submit(conn, "word_count", {"text": "again and again", "flaky": True}, queue=queue)
    bad = submit(conn, "word_count", {"words": 3}, queue=queue)
    wait_for(
        lambda: all_in(conn, [plain, flaky, bad], {"SUCCEEDED", "FAILED"}),
        message="the example tasks to end",
        procs=[worker],
    )

    row = task(conn, plain)
    assert row["state"] == "SUCCEEDED"
    assert row["result"] == {"words": 10, "distinct": 8, "output": str(out / f"task-{plain}.json")}
    written = json.loads((out / f"task-{plain}.json").read_text())
    assert written["counts"]["to"] == 2 and (written["task_id"], written["attempt_number"]) == (plain, 1)

    assert history(conn, flaky) == ["FAILED", "SUCCEEDED"]
    assert json.loads((out / f"task-{flaky}.json").read_text())["attempt_number"] == 2
    assert task(conn, bad)["state"] == "FAILED"
    assert task(conn, bad)["last_error"]["type"] == "ValueError"


def test_example_fencing_refuses_a_stale_attempt(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("handlers_example_fencing", ROOT / "examples" / "handlers_example.py")
    module = importlib.util.module_from_spec(spec)
    from taskforge import handlers

    saved = handlers.registry.get("word_count")
    try:
        if saved is not None:
            handlers.registry.unregister("word_count")
        spec.loader.exec_module(module)
    finally:
        handlers.registry.unregister("word_count")
        if saved is not None:
            handlers.registry.register("word_count", saved)
    path = tmp_path / "t.json"
    module.fenced_write(path, (7, 2), {"v": "new"})
    with pytest.raises(module.StaleAttempt):
        module.fenced_write(path, (7, 1), {"v": "old"})
    module.fenced_write(path, (7, 3), {"v": "newer"})
    assert json.loads(path.read_text()) == {"v": "newer", "task_id": 7, "attempt_number": 3}


def test_paused_worker_loses_its_lease_and_its_late_result_is_refused(spawn, conn, queue):
    spawn.scheduler()
    paused = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-paused")
    wait_registered(conn, paused)
    task_id = submit(conn, "sleep", {"ms": 12000}, queue=queue)
    wait_running(conn, task_id, 1, procs=[paused])
    wait_log(paused, f"claimed task {task_id} attempt 1")
    other = spawn.worker("--queue", queue, "--lease-seconds", "2", name=f"{queue}-other")
    wait_registered(conn, other)

    paused.signal(signal.SIGSTOP)  # a long GC pause, a frozen VM, ...
    try:
        wait_for(lambda: history(conn, task_id) == ["ABANDONED", "RUNNING"], message="attempt 2 to start")
    finally:
        paused.signal(signal.SIGCONT)
    # Its next renewal says renewed = false; its handler still runs and offers the result, which
    # the database refuses: attempt 2 owns the task now. The handler ran twice (at least once).
    wait_log(paused, f"lease lost for task {task_id} attempt 1")
    wait_log(paused, f"did not accept the succeeded outcome of task {task_id} attempt 1: stale_attempt")
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="attempt 2 to succeed", procs=[other])
    rows = attempts(conn, task_id)
    assert [(a["state"], a["worker_name"]) for a in rows] == [
        ("ABANDONED", f"{queue}-paused"),
        ("SUCCEEDED", f"{queue}-other"),
    ]
    assert paused.alive()


def test_info_logs_one_line_when_a_task_starts_and_one_when_it_ends(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, log_level="INFO")
    wait_registered(conn, worker)
    task_id = submit(conn, "echo", {"n": 1}, queue=queue)
    wait_log(worker, f"finalized task {task_id} attempt 1: succeeded -> task SUCCEEDED")
    log = worker.log()
    assert f"claimed task {task_id} attempt 1 (echo, queue {queue})" in log
    assert "handler ended" not in log  # the handler's own end stays at DEBUG
