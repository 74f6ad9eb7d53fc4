"""`taskforge demo`: the whole system end to end with real worker and scheduler processes.

The runs use a fresh database per test (--dsn) or the embedded PostgreSQL under a temporary
--data-dir, never the repository's own .taskforge/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest

from taskforge import client, database as tfdb, demo

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "demo_workload.jsonl"


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}


def demo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "taskforge.cli", "demo", *args]


def started_pids(stdout: str) -> list[int]:
    line = next(line for line in stdout.splitlines() if line.startswith("started 4 workers"))
    return [int(p) for p in re.findall(r"pid (\d+)", line)]


def process_exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def assert_summary(stdout: str) -> None:
    # At least the SIGKILLed attempt was abandoned (a badly stalled machine could lose another lease).
    assert re.search(
        r"^recovery lag:\s+[1-9]\d* abandoned attempt\(s\), lag after lease expiry min \d+ ms", stdout, re.M
    ), stdout
    for fragment in (
        "tasks per state:",
        "attempts per task:",
        "throughput:",
        "invariant audit:    tf_invariant_violations has 0 row(s)",
        "ok   every task reached a terminal state (41/41)",
        "ok   fail_once       5/5 as expected: SUCCEEDED on attempt 2: FAILED -> SUCCEEDED",
        "ok   fail            2/2 as expected: FAILED after 1 attempt",
        "ok   retryable_fail  2/2 as expected: FAILED after max_attempts FAILED attempts",
        "ok   sleep           18/18 as expected",
        "ok   echo            6/6 as expected",
        "ok   noop            8/8 as expected",
        "with created=false",
        "succeeded on the next attempt (ABANDONED -> SUCCEEDED)",
        "ok   tf_invariant_violations is empty",
        "result: PASS, every expectation held",
    ):
        assert fragment in stdout, f"{fragment!r} missing from:\n{stdout}"
    assert "FAIL " not in stdout
    assert re.search(r"^SIGKILL worker-\d \(pid \d+\) while it runs task \d+ \(sleep 8000 ms", stdout, re.M), stdout


# --- the workload file and the expectation checks (no database) --------------------------------


def test_shipped_workload_has_the_promised_mix():
    items = demo.load_workload(WORKLOAD)
    types = {i.task_type for i in items}
    assert types == set(demo.EXPECTATIONS)
    assert len({i.priority for i in items}) >= 4
    assert any(i.delay_seconds for i in items)
    keys = [i.idempotency_key for i in items if i.idempotency_key]
    assert len(keys) == 2 and len(set(keys)) == 1, "one idempotent replay of the same key"
    replayed = [i for i in items if i.idempotency_key]
    assert (replayed[0].payload, replayed[0].queue, replayed[0].priority) == (
        replayed[1].payload,
        replayed[1].queue,
        replayed[1].priority,
    )
    assert any(
        i.task_type == "sleep" and i.payload["ms"] >= demo.KILL_MIN_SLEEP_MS and i.max_attempts >= 2 for i in items
    ), "a long sleep for the SIGKILL"
    assert all(i.max_attempts <= 3 for i in items if i.task_type == "retryable_fail")
    assert len({i.payload.get("ms") for i in items if i.task_type == "sleep"}) >= 4


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"type": "noop"}\n{bad json}\n', ":2: not valid JSON"),
        ('["noop"]\n', ":1: each line must be a JSON object"),
        ('{"type": "explode"}\n', ":1: type must be one of"),
        ('{"type": "noop", "colour": "red"}\n', ":1: unknown key(s) colour"),
        ('{"type": "noop", "count": 0}\n', ":1: count must be an integer"),
        ('{"type": "echo", "payload": [1]}\n', ":1: payload must be a JSON object"),
        ('{"type": "echo", "idempotency_key": "k", "delay_seconds": 3}\n', ":1: an idempotency_key needs"),
        ("# only a comment\n\n", "no tasks in the workload"),
    ],
)
def test_load_workload_names_the_bad_line(tmp_path, text, message):
    path = tmp_path / "w.jsonl"
    path.write_text(text)
    with pytest.raises(demo.DemoError) as info:
        demo.load_workload(path)
    assert message in str(info.value)


def test_expectation_checks_reject_wrong_histories():
    def task(task_id, task_type, state, max_attempts=3, payload=None, result=None):
        return {
            "task_id": task_id,
            "task_type": task_type,
            "state": state,
            "max_attempts": max_attempts,
            "payload": payload or {},
            "result": result,
        }

    def attempts(task_id, *states):
        return [{"task_id": task_id, "attempt_number": n, "state": s} for n, s in enumerate(states, 1)]

    good = [
        task(1, "fail_once", "SUCCEEDED"),
        task(2, "sleep", "SUCCEEDED"),
        task(3, "fail", "FAILED"),
        task(4, "retryable_fail", "FAILED", max_attempts=2),
        task(5, "echo", "SUCCEEDED", payload={"a": 1}, result={"a": 1}),
    ]
    good_attempts = (
        attempts(1, "FAILED", "SUCCEEDED")
        + attempts(2, "ABANDONED", "SUCCEEDED")
        + attempts(3, "FAILED")
        + attempts(4, "FAILED", "FAILED")
        + attempts(5, "SUCCEEDED")
    )
    assert all(ok for ok, _, _ in demo.check_expectations(good, good_attempts))

    bad = [
        task(1, "fail_once", "SUCCEEDED"),
        task(2, "sleep", "SUCCEEDED"),
        task(3, "fail", "FAILED"),
        task(4, "retryable_fail", "FAILED", max_attempts=3),
        task(5, "echo", "SUCCEEDED", payload={"a": 1}, result={"a": 2}),
    ]
    bad_attempts = (
        attempts(1, "SUCCEEDED")
        + attempts(2, "FAILED", "SUCCEEDED")
        + attempts(3, "FAILED", "FAILED")
        + attempts(4, "FAILED", "FAILED")
        + attempts(5, "SUCCEEDED")
    )
    results = demo.check_expectations(bad, bad_attempts)
    assert [ok for ok, _, _ in results] == [False] * 5
    assert any("task 1: SUCCEEDED after SUCCEEDED" in p for _, _, problems in results for p in problems)


def test_bad_workload_is_one_line_and_touches_no_database(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"type": "noop"}\nnot json\n')
    proc = subprocess.run(
        demo_command(
            "--once", "--workload", str(path), "--dsn", "host=127.0.0.1 port=1", "--data-dir", str(tmp_path / "d")
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and ":2: not valid JSON" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# --- real runs ------------------------------------------------------------------------------------


@pytest.mark.integration
def test_demo_once_against_a_dsn(fresh_database, tmp_path):
    dsn = fresh_database("taskforge_demo_dsn")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Things of the database owner: the demo must leave them alone.
        conn.execute("CREATE TABLE public.keep_me (id int)")
        other = client.submit(conn, "noop", queue="other_app").task_id

    started = time.monotonic()
    proc = subprocess.run(
        demo_command("--once", "--dsn", dsn, "--data-dir", str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = proc.stdout
    assert "using the database given by the DSN (it is migrated; nothing is dropped)" in out
    assert "migrated: already up to date" in out
    assert "SELECT * FROM taskforge.tf_submit(task_type => 'echo'," in out
    assert_summary(out)
    assert "draining [" in proc.stderr and "41/41 finished" in proc.stderr
    assert re.search(r"stopped 6 process\(es\) with SIGTERM \(exit codes: (\S+=0(, )?){6}\)", out), out
    assert elapsed < 240, elapsed

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('public.keep_me') IS NOT NULL").fetchone()[0]
        assert client.get_task(conn, other)["state"] == "QUEUED", "other queues are not the demo's"
        assert client.invariant_violations(conn) == []
        tasks = client.list_tasks(conn, limit=1000)
        mine = [t for t in tasks if t["task_id"] != other]
        assert len(mine) == 41 and all(t["state"] in ("SUCCEEDED", "FAILED") for t in mine)
        assert {t["queue"].split(".")[0] for t in mine} == {"default", "emails", "reports"}
        # Every worker deregistered at the end except the one killed with SIGKILL.
        workers = client.workers(conn, include_stopped=True)
        assert len(workers) == 5
        assert sum(w["stopped_at"] is None for w in workers) == 1
    for pid in started_pids(out):
        assert not process_exists(pid), f"child {pid} is still running"
    logs = list((tmp_path / "logs").glob("demo-*/worker-*.log"))
    assert len(logs) == 5


@pytest.mark.integration
def test_demo_without_once_keeps_running_until_ctrl_c(fresh_database, tmp_path):
    dsn = fresh_database("taskforge_demo_run")
    with open(tmp_path / "stderr.txt", "w") as stderr_file:  # the child keeps its own copy
        proc = subprocess.Popen(
            demo_command("--dsn", dsn, "--data-dir", str(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
            env=clean_env(),
        )
    lines: list[str] = []
    ready = threading.Event()

    def reader():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Press Ctrl-C to stop."):
                ready.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        assert ready.wait(300), "".join(lines)
        out = "".join(lines)
        assert_summary(out)
        with psycopg.connect(dsn, autocommit=True) as conn:
            alive = [w for w in client.workers(conn) if w["liveness"] == "alive" and w["stopped_at"] is None]
            # Four live workers keep serving; a task submitted now is picked up.
            queue = re.search(r"--queue (default\.[0-9a-f]{4})", out).group(1)
            task_id = client.submit(conn, "echo", {"late": True}, queue=queue).task_id
            deadline = time.monotonic() + 60
            while client.get_task(conn, task_id)["state"] != "SUCCEEDED":
                assert time.monotonic() < deadline, "a task submitted after the summary was not run"
                time.sleep(0.1)
        # The console serves while the demo runs, and shows that task.
        console_url = re.search(r"^console: (http://127\.0\.0\.1:\d+/) ", out, re.M).group(1)
        with urllib.request.urlopen(f"{console_url}api/tasks/{task_id}", timeout=10) as response:
            assert json.loads(response.read())["state"] == "SUCCEEDED"
        assert (
            len(
                {w["pid"] for w in alive}
                & set(started_pids(out) + [int(p) for p in re.findall(r"started worker-5 \(pid (\d+)\)", out)])
            )
            >= 4
        )
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    thread.join(timeout=10)
    out = "".join(lines)
    assert "stopping" in out
    assert re.search(r"stopped 6 process\(es\) with SIGTERM \(exit codes: (\S+=0(, )?){6}\)", out), out
    with psycopg.connect(dsn, autocommit=True) as conn:
        workers = client.workers(conn, include_stopped=True)
        assert sum(w["stopped_at"] is None for w in workers) == 1  # only the SIGKILLed one
        assert client.invariant_violations(conn) == []
    for pid in started_pids(out):
        assert not process_exists(pid)


@pytest.mark.integration
@pytest.mark.slow
def test_demo_once_with_the_embedded_postgres(tmp_path):
    data_dir = tmp_path / ".taskforge"
    proc = subprocess.run(
        demo_command("--once", "--data-dir", str(data_dir)),
        capture_output=True,
        text=True,
        timeout=400,
        env=clean_env(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = proc.stdout
    assert f"starting the embedded PostgreSQL in {data_dir.resolve() / 'pgdata'} (initdb, first run)" in out
    assert "embedded PostgreSQL ready" in out
    assert_summary(out)
    assert out.rstrip().endswith("stopped the embedded PostgreSQL")
    assert (data_dir / "pgdata" / "PG_VERSION").exists()
    # The server is stopped: no postgres process serves that data directory any more.
    pgdata = str((data_dir / "pgdata").resolve())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            assert not ("postgres" in cmdline and pgdata in cmdline), cmdline
