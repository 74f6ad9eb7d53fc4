"""Fixtures for the tests that start real worker and scheduler processes (real signals).

Processes are started by taskforge.processes (the harness the demo and the benchmarks use too) as
``python -m taskforge.cli worker|scheduler ...`` with TASKFORGE_DSN set to the session's test
database (or to a database a test creates), their output going to a log file under the test's
tmp_path. Every process still running at teardown is killed with SIGKILL;
the logs of all processes are printed so a failing test shows them.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import taskforge.synthetic  # noqa: F401  (in-process workers of these tests run the synthetic task types)
from taskforge.processes import ManagedProcess, ProcessHarness, taskforge_command

from itest_support import ROOT


class Spawner:
    """Starts workers and schedulers against one database, through the project's one process
    harness (taskforge.processes): each child in a session of its own, its output in a log
    file under the test's tmp_path."""

    def __init__(self, dsn: str, tmp_path: Path) -> None:
        self.harness = ProcessHarness(dsn, tmp_path, cwd=ROOT)

    def _start(
        self, kind: str, name: str, args: list[str], env: dict[str, str] | None, prefix: list[str] | None
    ) -> ManagedProcess:
        return self.harness.start([*(prefix or []), *taskforge_command(kind, args)], kind=kind, name=name, env=env)

    def worker(
        self,
        *args: str,
        name: str | None = None,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
        log_level: str = "DEBUG",
    ) -> ManagedProcess:
        """Start ``taskforge worker --name NAME --log-level LEVEL ARGS...`` (``prefix``: a command
        to run it under, e.g. faketime)."""
        name = name or f"w-{uuid.uuid4().hex[:8]}"
        # The tests' workloads use the synthetic task types, which a worker runs only when told.
        argv = ["--name", name, "--log-level", log_level, "--import", "taskforge.synthetic", *args]
        return self._start("worker", name, argv, env, prefix)

    def scheduler(self, *args: str, name: str | None = None, env: dict[str, str] | None = None) -> ManagedProcess:
        name = name or f"s-{uuid.uuid4().hex[:8]}"
        return self._start("scheduler", name, ["--log-level", "DEBUG", *args], env, None)

    def shutdown(self) -> None:
        """SIGKILL whatever still runs and print the tail of every log (a failing test shows them)."""
        self.harness.kill_all()
        for proc in self.harness.processes:
            print(f"----- {proc.kind} {proc.name} (exit {proc.returncode}) {proc.log_path}\n{proc.tail(80)}")


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


#: Task types of itest_handlers.py, itest_async_handlers.py, itest_tx_handlers.py and
#: examples/handlers_example.py, with their backoff base (s).
TEST_TASK_TYPES = {
    "itest.fail_once": 0.1,
    "itest.nasty_error": 2,
    "itest.nan_result": 2,
    "itest.nul_result": 2,
    "itest.deep_result": 2,
    "itest.sleep_report": 2,
    "itest.stubborn": 2,
    "itest.async_cancellable": 0.1,
    "itest.async_blocker": 2,
    "itest.tx_write": 2,
    "itest.async_tx_write": 2,
    "word_count": 1,
    "itest.flow_step": 2,
    "itest.async_flow_step": 2,
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
