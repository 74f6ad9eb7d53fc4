"""Fixtures for the integration tests: real worker and scheduler processes, real signals.

Processes are started as ``python -m taskforge.cli worker|scheduler ...`` with TASKFORGE_DSN set
to the session's test database (or to a database a test creates), their stderr going to a log
file under the test's tmp_path. Every process still running at teardown is killed with SIGKILL;
the logs of all processes are printed so a failing test shows them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from itest_support import ROOT


class Proc:
    """One spawned process with its log file."""

    def __init__(self, kind: str, name: str, args: list[str], env: dict, log_path: Path, prefix: list[str]):
        self.kind, self.name, self.log_path = kind, name, log_path
        self.args = [*prefix, sys.executable, "-m", "taskforge.cli", kind, *args]
        with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
            self.popen = subprocess.Popen(
                self.args, env=env, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def kill(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        """Wait for exit; return the exit code (raises subprocess.TimeoutExpired)."""
        return self.popen.wait(timeout=timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


class Spawner:
    """Starts workers and schedulers against one database."""

    def __init__(self, dsn: str, tmp_path: Path):
        self.dsn = dsn
        self.tmp_path = tmp_path
        self.procs: list[Proc] = []

    def env(self, extra: dict | None = None) -> dict:
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        env["TASKFORGE_DSN"] = self.dsn
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "clients" / "python"), env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra or {})
        return env

    def _start(self, kind: str, name: str, args: list[str], env: dict | None, prefix: list[str] | None) -> Proc:
        log_path = self.tmp_path / f"{kind}-{name}-{len(self.procs)}.log"
        proc = Proc(kind, name, args, self.env(env), log_path, prefix or [])
        self.procs.append(proc)
        return proc

    def worker(
        self,
        *args: str,
        name: str | None = None,
        env: dict | None = None,
        prefix: list[str] | None = None,
        log_level: str = "DEBUG",
    ) -> Proc:
        """Start ``taskforge worker --name NAME --log-level LEVEL ARGS...``."""
        name = name or f"w-{uuid.uuid4().hex[:8]}"
        return self._start("worker", name, ["--name", name, "--log-level", log_level, *args], env, prefix)

    def scheduler(self, *args: str, name: str | None = None, env: dict | None = None) -> Proc:
        name = name or f"s-{uuid.uuid4().hex[:8]}"
        return self._start("scheduler", name, ["--log-level", "DEBUG", *args], env, None)

    def shutdown(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):  # keep killing the others
                proc.kill()
        for proc in self.procs:
            tail = "\n".join(proc.log().splitlines()[-80:])
            print(f"----- {proc.kind} {proc.name} (exit {proc.popen.returncode}) {proc.log_path}\n{tail}")


@pytest.fixture()
def spawn(db_dsn, tmp_path):
    """A :class:`Spawner` for the session's test database; kills what it started at teardown."""
    spawner = Spawner(db_dsn, tmp_path)
    yield spawner
    spawner.shutdown()


@pytest.fixture()
def spawn_factory(tmp_path):
    """Spawner for other databases: ``spawn_factory(dsn)``; kills what it started at teardown."""
    spawners: list[Spawner] = []

    def make(dsn: str) -> Spawner:
        spawner = Spawner(dsn, tmp_path)
        spawners.append(spawner)
        return spawner

    yield make
    for spawner in spawners:
        spawner.shutdown()


@pytest.fixture()
def queue() -> str:
    """A queue name no other test uses."""
    return f"it_{uuid.uuid4().hex[:12]}"


#: Task types of itest_handlers.py and examples/handlers_example.py, with their backoff base (s).
TEST_TASK_TYPES = {
    "itest.fail_once": 0.1,
    "itest.nasty_error": 2,
    "itest.nan_result": 2,
    "itest.nul_result": 2,
    "itest.sleep_report": 2,
    "word_count": 1,
}


def register_test_task_types(dsn: str) -> None:
    """Allow the test task types (tf_register_task_type is for the owner/DBA: the tests connect
    as a superuser). Idempotent."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        for name, base in TEST_TASK_TYPES.items():
            c.execute(
                "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_base_seconds => %s, "
                "backoff_jitter => 0)",
                (name, base),
            )


@pytest.fixture(scope="session")
def test_task_types(db_dsn) -> None:
    register_test_task_types(db_dsn)
