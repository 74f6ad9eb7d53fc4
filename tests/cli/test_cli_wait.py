"""`taskforge submit --wait`: a real CLI process submits, waits for the task's end (finished here
through the SQL API, as a worker would) and exits 0 when it SUCCEEDED, 1 when it FAILED or was
CANCELLED, 5 when it had not ended within --wait-timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg
import pytest

from taskforge import client

from sqlcore_helpers import run_only_task, unique_name


def _start(dsn: str, queue: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "taskforge.cli", "submit", "echo", "--queue", queue, "--dsn", dsn, "--wait", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _the_task(conn: psycopg.Connection, queue: str, proc: subprocess.Popen[str]) -> int:
    """The id of the task the process submitted (polled until it is committed)."""
    for _ in range(600):
        tasks = client.list_tasks(conn, queue=queue)
        if tasks:
            return tasks[0].task_id
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the CLI never submitted its task")


def _end(dsn: str, queue: str, task_id: int, outcome: str) -> None:
    if outcome == "succeeded":
        run_only_task(dsn, queue, task_id, result={"n": 1})
    else:
        run_only_task(dsn, queue, task_id, outcome, error={"type": "Boom", "message": "it broke"})


@pytest.mark.parametrize(
    ("outcome", "code", "line"),
    [
        ("succeeded", 0, 'SUCCEEDED after 1 attempt(s): {"n": 1}'),
        ("failed", 1, "FAILED after 1 attempt(s): Boom: it broke"),
    ],
)
def test_submit_wait_prints_the_outcome_and_exits_by_it(conn, db_dsn, outcome, code, line):
    queue = unique_name()
    proc = _start(db_dsn, queue, "--max-attempts", "1")
    task_id = _the_task(conn, queue, proc)
    assert client.get_task(conn, task_id).notify_finished  # --wait asks for the notification
    _end(db_dsn, queue, task_id, outcome)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, (out, err)
    assert out.splitlines() == [f"task {task_id} QUEUED (created)", f"task {task_id} {line}"]


def test_submit_wait_json_and_a_cancel(conn, db_dsn):
    queue = unique_name()
    proc = _start(db_dsn, queue, "--json")
    task_id = _the_task(conn, queue, proc)
    client.cancel(conn, task_id, reason="not needed")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    submitted, task = (json.loads(line) for line in out.splitlines())  # JSON lines: the submit, then the task
    assert submitted == {"task_id": task_id, "state": "QUEUED", "created": True}
    assert (task["task_id"], task["state"], task["cancel_reason"]) == (task_id, "CANCELLED", "not needed")


def test_submit_wait_times_out_with_exit_code_5(db_dsn):
    queue = unique_name()
    proc = _start(db_dsn, queue, "--wait-timeout", "0.5")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 5, (out, err)
    assert "is still QUEUED after 0.5 s" in err


def test_submit_wait_is_not_for_from_file(db_dsn, tmp_path):
    lines = tmp_path / "tasks.jsonl"
    lines.write_text('{"task_type": "echo"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "submit", "--from-file", str(lines), "--wait", "--dsn", db_dsn],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "--wait: waits for one task: not with --from-file" in proc.stderr


def test_wait_timeout_without_wait_is_refused(db_dsn):
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "submit", "echo", "--wait-timeout", "2", "--dsn", db_dsn],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "--wait-timeout: only with --wait" in proc.stderr


def test_submit_wait_survives_a_lost_connection(conn, db_dsn):
    queue = unique_name()
    proc = _start(db_dsn, queue)
    task_id = _the_task(conn, queue, proc)
    listening = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND application_name = 'taskforge' AND query LIKE '%tf_tasks%'"
    )
    for _ in range(600):  # the CLI's session, waiting (its last statement the read of the task)
        pids = [r[0] for r in conn.execute(listening).fetchall()]
        if pids:
            break
        time.sleep(0.05)
    assert pids, "the waiting session never showed"
    conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
    _end(db_dsn, queue, task_id, "succeeded")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    assert out.splitlines()[-1].startswith(f"task {task_id} SUCCEEDED")
