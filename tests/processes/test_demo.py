"""`taskforge demo`: the whole system end to end with real worker and scheduler processes.

The runs use a fresh database per test (--dsn) or the embedded PostgreSQL under a temporary
--data-dir, never the repository's own .taskforge/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest

from taskforge import client, database as tfdb


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}


def demo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "taskforge.cli", "demo", *args]


def started_pids(stdout: str) -> list[int]:
    line = next(line for line in stdout.splitlines() if line.startswith("started 4 workers"))
    return [int(p) for p in re.findall(r"pid (\d+)", line)]


def start_running_demo(
    dsn: str, data_dir: Path, stderr
) -> tuple[subprocess.Popen, list[str], threading.Event, threading.Thread]:
    """`taskforge demo` without --once: the process, its stdout lines as they come (a reader
    thread), and the event set once it says it keeps running."""
    proc = subprocess.Popen(
        demo_command("--dsn", dsn, "--data-dir", str(data_dir)),
        stdout=subprocess.PIPE,
        stderr=stderr,
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
    return proc, lines, ready, thread


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


# --- a bad workload file: one line, no database touched ----------------------------------------


def test_bad_workload_is_one_line_and_touches_no_database(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"task_type": "noop"}\nnot json\n')
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
    assert "draining: started (41 tasks)" in proc.stderr and "draining: 41/41 finished in " in proc.stderr
    assert re.search(r"stopped 6 process\(es\) with SIGTERM \(exit codes: (\S+=0(, )?){6}\)", out), out
    assert elapsed < 240, elapsed

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('public.keep_me') IS NOT NULL").fetchone()[0]
        assert client.get_task(conn, other).state == "QUEUED", "other queues are not the demo's"
        assert client.invariant_violations(conn) == []
        tasks = client.list_tasks(conn, limit=1000)
        mine = [t for t in tasks if t.task_id != other]
        assert len(mine) == 41 and all(t.state in ("SUCCEEDED", "FAILED") for t in mine)
        assert {t.queue.split(".")[0] for t in mine} == {"default", "emails", "reports"}
        # Every worker deregistered at the end except the one killed with SIGKILL.
        workers = client.workers(conn, include_stopped=True)
        assert len(workers) == 5
        assert sum(w.stopped_at is None for w in workers) == 1
    for pid in started_pids(out):
        assert not process_exists(pid), f"child {pid} is still running"
    logs = list((tmp_path / "logs").glob("demo-*/worker-*.log"))
    assert len(logs) == 5


def test_demo_without_once_keeps_running_until_ctrl_c(fresh_database, tmp_path):
    dsn = fresh_database("taskforge_demo_run")
    with open(tmp_path / "stderr.txt", "w") as stderr_file:  # the child keeps its own copy
        proc, lines, ready, thread = start_running_demo(dsn, tmp_path, stderr_file)
    try:
        assert ready.wait(300), "".join(lines)
        out = "".join(lines)
        assert_summary(out)
        with psycopg.connect(dsn, autocommit=True) as conn:
            alive = [w for w in client.workers(conn) if w.liveness == "alive" and w.stopped_at is None]
            # Four live workers keep serving; a task submitted now is picked up.
            queue = re.search(r"--queue (default\.[0-9a-f]{4})", out).group(1)
            task_id = client.submit(conn, "echo", {"late": True}, queue=queue).task_id
            deadline = time.monotonic() + 60
            while client.get_task(conn, task_id).state != "SUCCEEDED":
                assert time.monotonic() < deadline, "a task submitted after the summary was not run"
                time.sleep(0.1)
        # The console serves while the demo runs, and shows that task.
        console_url = re.search(r"^console: (http://127\.0\.0\.1:\d+/) ", out, re.M).group(1)
        with urllib.request.urlopen(f"{console_url}api/tasks/{task_id}", timeout=10) as response:
            assert json.loads(response.read())["state"] == "SUCCEEDED"
        assert (
            len(
                {w.pid for w in alive}
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
        assert sum(w.stopped_at is None for w in workers) == 1  # only the SIGKILLed one
        assert client.invariant_violations(conn) == []
    for pid in started_pids(out):
        assert not process_exists(pid)


@pytest.fixture()
def outside_pytest_tmp():
    """A directory outside /tmp/pytest-of-<user>, which every new pytest session makes private
    again (mode 0700), locking the embedded server's own user out mid-run (see
    tests/helpers/suite_server.py)."""
    path = Path(tempfile.mkdtemp(prefix="taskforge-demo-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_demo_once_with_the_embedded_postgres(outside_pytest_tmp, tmp_path):
    data_dir = outside_pytest_tmp / ".taskforge"
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


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (a reparented child may wait to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sigkilled_demo_takes_its_workers_scheduler_and_console_with_it(fresh_database, tmp_path):
    dsn = fresh_database("taskforge_demo_killed")
    proc, lines, ready, _ = start_running_demo(dsn, tmp_path, subprocess.STDOUT)
    try:
        assert ready.wait(300), "".join(lines)
        out = "".join(lines)
        children = {int(p) for p in re.findall(r"\bpid (\d+)", out)}
        console = re.search(r"^console: (http://127\.0\.0\.1:\d+/) ", out, re.M).group(1)
        # the scheduler, the three workers the demo did not SIGKILL and the one started in its place
        live = {pid for pid in children if _running(pid)}
        assert len(live) >= 5, out
        proc.kill()  # no handler runs: only the kernel can tell the children
        proc.wait(timeout=30)
        deadline = time.monotonic() + 90
        while {pid for pid in live if _running(pid)} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not {pid for pid in live if _running(pid)}, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(OSError):
        urllib.request.urlopen(console, timeout=5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        workers = client.workers(conn, include_stopped=True)
        # each worker stopped as SIGTERM stops it (deregistered), except the one the demo SIGKILLed
        assert sum(w.stopped_at is None for w in workers) == 1
        assert client.invariant_violations(conn) == []
