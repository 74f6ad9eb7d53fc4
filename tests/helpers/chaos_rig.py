"""The chaos rig: a private PostgreSQL server, real workers and schedulers, a keyed workload, and
one method per fault (tests/chaos, ``make chaos``; the page is docs/chaos.md).

:class:`ChaosRig` starts a :class:`~taskforge.private_server.PrivateServer`, migrates a database on it with
``taskforge db migrate``, registers ``chaos.work`` (``chaos_handlers.py``) and starts WORKERS
workers and SCHEDULERS schedulers through the project's process harness. Worker slot ``i``
claims from queue ``chaos`` and from its own probe queue ``probe_i``; its poll interval is
POLL_SECONDS (a minute), so a task it picks up in a second was announced by NOTIFY: that is how
a round shows each worker's listener is subscribed again after a fault.

:meth:`ChaosRig.round` runs one fault: it submits a batch of keyed tasks, waits until work is
in flight, injects the fault while a submitter keeps adding tasks (retrying each key until the
database answers: an unacknowledged submit is sent again with the same key), heals it, waits
until every task is terminal, checks every rule (``chaos_checks.check``), sends one probe task
to each worker's probe queue and records the pickup latency. Figures go to a
:class:`FaultReport` per fault.

Times are seconds; database instants are compared as epoch seconds (same machine).
"""

from __future__ import annotations

import contextlib
import random
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from psycopg.types.json import Jsonb
from rig_base import RigBase

from taskforge.private_server import PrivateServer
from taskforge.processes import ManagedProcess, ProcessHarness, taskforge_command

from chaos_checks import TERMINAL, Verdict, check
from chaos_handlers import RUN_LOG_ENV, TASK_TYPE

__all__ = ["ChaosRig", "FaultReport"]

HELPERS = Path(__file__).resolve().parent
ROOT = HELPERS.parents[1]

WORKERS = 3
CONCURRENCY = 4
SCHEDULERS = 2
LEASE_SECONDS = 3.0
POLL_SECONDS = 60.0
HEARTBEAT_SECONDS = 1.0
MAX_ATTEMPTS = 4
#: Tasks submitted at the start of each round, and by the submitter during the fault (at most).
BATCH = 36
SUBMIT_EVERY_SECONDS = 0.15
#: Longest wait for every task to end after a fault is healed.
DRAIN_TIMEOUT = 180.0
#: A probe must be picked up this fast (POLL_SECONDS is far longer: only NOTIFY can do it).
PICKUP_LIMIT_SECONDS = 5.0
DATABASE = "taskforge_chaos"

#: The rig's own connections (admin reads, faults) stay writable when the database is read-only.
ADMIN_OPTIONS = "-c default_transaction_read_only=off"

SUBMIT = """
SELECT task_id, created FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s,
       queue => %(queue)s, max_attempts => %(max_attempts)s, idempotency_key => %(key)s)
"""
SUBMIT_MANY = "SELECT task_id, created FROM taskforge.tf_submit_many(requests => %(requests)s)"
RUNNING_BY_OWNER = """
SELECT w.name, count(*) FROM taskforge.tasks t JOIN taskforge.workers w ON w.worker_id = t.owner_worker_id
 WHERE t.state = 'RUNNING' GROUP BY w.name ORDER BY count(*) DESC
"""
BACKENDS = "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'taskforge-%%'"
TERMINATE = """
SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE application_name LIKE ANY(%(patterns)s) AND pid <> pg_backend_pid()
"""
PROBE_LATENCY = """
SELECT extract(epoch FROM a.started_at - t.created_at)::float8
  FROM taskforge.tasks t JOIN taskforge.attempts a ON a.task_id = t.task_id AND a.attempt_number = 1
 WHERE t.task_id = %(task_id)s
"""


@dataclass
class FaultReport:
    """What one fault did and what the checks saw afterwards."""

    name: str
    description: str
    injected: list[str] = field(default_factory=list)
    submitted: int = 0
    submit_errors: int = 0
    replays: int = 0
    drain_seconds: float = 0.0
    pickup_seconds: list[float] = field(default_factory=list)
    resubscribed: int = 0
    #: Figures over every task of the run so far (cumulative), and what this round added.
    verdict: dict[str, Any] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fault": self.name,
            "description": self.description,
            "injected": self.injected,
            "tasks_submitted": self.submitted,
            "submit_errors_retried": self.submit_errors,
            "submit_replays": self.replays,
            "drain_seconds": round(self.drain_seconds, 2),
            "pickup_ms": [round(s * 1000, 1) for s in self.pickup_seconds],
            "listeners_resubscribed": self.resubscribed,
            "this_round": self.added,
            "after": self.verdict,
        }


class Submitter(threading.Thread):
    """Submits one keyed task every SUBMIT_EVERY_SECONDS until stopped; a key whose submit failed
    (no answer, or an error such as a read-only database) is sent again until it is accepted."""

    def __init__(self, rig: ChaosRig, prefix: str) -> None:
        super().__init__(daemon=True, name="chaos-submitter")
        self.rig, self.prefix = rig, prefix
        self.stop = threading.Event()
        self.submitted = self.errors = self.replays = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        n = 0
        try:
            while not self.stop.is_set() and n < BATCH:
                key = f"{self.prefix}-live-{n}"
                payload = self.rig.payload()
                self.rig.keys[key] = payload["kind"]  # planned before the first try: it must exist afterwards
                tries = 0
                while True:
                    tries += 1
                    try:
                        if conn is None or conn.closed:
                            conn = psycopg.connect(self.rig.dsn, autocommit=True, connect_timeout=2)
                        _, created = conn.execute(
                            SUBMIT,
                            {
                                "task_type": TASK_TYPE,
                                "payload": Jsonb(payload),
                                "queue": "chaos",
                                "max_attempts": MAX_ATTEMPTS,
                                "key": key,
                            },
                        ).fetchone()
                        break
                    except psycopg.Error:
                        self.errors += 1
                        with contextlib.suppress(psycopg.Error):
                            if conn is not None:
                                conn.close()
                        conn = None
                        if tries > 600:
                            raise
                        time.sleep(0.1)
                if not created:
                    self.replays += 1  # the first try had committed; its answer was lost
                self.submitted += 1
                n += 1
                self.stop.wait(SUBMIT_EVERY_SECONDS)
        except Exception as exc:  # noqa: BLE001  (any failure is reported by the round)
            self.failure = exc
        finally:
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    conn.close()


class ChaosRig(RigBase):
    """See the module docstring. ``workdir`` receives the process logs, the run log and the
    server's log; ``seed`` fixes the workload's mix and durations."""

    #: The rig's own connection stays writable when the database is made read-only.
    ADMIN_CONNECT: ClassVar[dict[str, Any]] = {"connect_timeout": 2, "options": ADMIN_OPTIONS}
    WAIT_TIMEOUT: ClassVar[float] = DRAIN_TIMEOUT

    def __init__(self, workdir: Path, seed: int = 20240601) -> None:
        self.workdir = workdir
        self.random = random.Random(seed)
        self.server = self._make_server()
        self.keys: dict[str, str] = {}
        self.killed: dict[int, float] = {}
        self.reports: list[FaultReport] = []
        self.last_verdict: Verdict | None = None
        self.run_log = workdir / "runs.jsonl"
        self.slots: list[ManagedProcess] = []
        self.schedulers: list[ManagedProcess] = []
        self._admin: psycopg.Connection[Any] | None = None
        self.started = time.monotonic()
        self.dsn = self.server.dsn(DATABASE)
        self.harness = ProcessHarness(self.dsn, workdir / "logs", env={RUN_LOG_ENV: str(self.run_log)}, cwd=ROOT)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _setup(self) -> None:
        self.server.start()
        with psycopg.connect(self.server.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        migrate = subprocess.run(
            taskforge_command("db", ["migrate", "--dsn", self.dsn]),
            capture_output=True,
            text=True,
            timeout=300,
            env=self.harness.child_env(),
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"taskforge db migrate failed:\n{migrate.stdout}{migrate.stderr}")
        self.sql(
            "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_base_seconds => 0.2, "
            "backoff_cap_seconds => 1, backoff_jitter => 0)",
            (TASK_TYPE,),
        )
        for i in range(WORKERS):
            self.slots.append(self._start_worker(i))
        for _ in range(SCHEDULERS):
            self.schedulers.append(self.start_scheduler())
        self.wait(
            lambda: self.sql_value("SELECT count(*) FROM taskforge.tf_workers WHERE liveness = 'alive'") == WORKERS,
            "the workers to register",
        )

    def _make_server(self) -> PrivateServer:
        """The server (a subclass may place it elsewhere: tests/helpers/partition_rig.py)."""
        return PrivateServer()

    # --- processes -------------------------------------------------------------------------------

    def _start_worker(self, slot: int) -> ManagedProcess:
        name = f"chaos-w{slot}-{self.harness.count('worker') + 1}"
        return self.harness.worker(*self.worker_args(slot), name=name, log_level="INFO")

    def worker_args(self, slot: int) -> list[str]:
        """The ``taskforge worker`` options of worker slot ``slot`` (queues, slots, lease, ...)."""
        return [
            "--queue",
            "chaos",
            "--queue",
            f"probe_{slot}",
            "--concurrency",
            str(CONCURRENCY),
            "--lease-seconds",
            str(LEASE_SECONDS),
            "--poll-seconds",
            str(POLL_SECONDS),
            "--heartbeat-seconds",
            str(HEARTBEAT_SECONDS),
            "--grace-seconds",
            "10",
            "--import",
            str(HELPERS / "chaos_handlers.py"),
        ]

    def start_scheduler(self) -> ManagedProcess:
        n = self.harness.count("scheduler") + 1
        return self.harness.scheduler(
            "--max-interval-seconds",
            "0.5",
            "--heartbeat-seconds",
            str(HEARTBEAT_SECONDS),
            name=f"chaos-s{n}",
            log_level="INFO",
        )

    def kill(self, proc: ManagedProcess) -> None:
        """SIGKILL (its unfinished executions end now, for the overlap check)."""
        self.killed[proc.pid] = time.time()
        proc.kill()

    def busiest_slot(self) -> int:
        """The worker slot holding the most RUNNING tasks right now."""
        rows = self.sql(RUNNING_BY_OWNER)
        names = [p.name for p in self.slots]
        for name, _ in rows:
            if name in names:
                return names.index(name)
        return 0

    def replace_worker(self, slot: int) -> ManagedProcess:
        self.slots[slot] = self._start_worker(slot)
        return self.slots[slot]

    # --- workload --------------------------------------------------------------------------------

    def payload(self) -> dict[str, Any]:
        kind = self.random.choices(["ok", "flaky", "fail"], weights=[8, 1, 1])[0]
        return {"ms": self.random.randint(100, 1500), "kind": kind}

    def submit_batch(self, prefix: str, n: int = BATCH) -> None:
        requests = []
        for i in range(n):
            payload = self.payload()
            key = f"{prefix}-batch-{i}"
            self.keys[key] = payload["kind"]
            requests.append(
                {
                    "task_type": TASK_TYPE,
                    "payload": payload,
                    "queue": "chaos",
                    "max_attempts": MAX_ATTEMPTS,
                    "idempotency_key": key,
                }
            )
        self.sql(SUBMIT_MANY, {"requests": Jsonb(requests)})

    def pending(self) -> int:
        return int(
            self.sql_value(
                "SELECT count(*) FROM taskforge.tasks WHERE idempotency_key IS NOT NULL "
                "AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
            )
        )

    def running(self) -> int:
        return int(self.sql_value("SELECT count(*) FROM taskforge.tasks WHERE state = 'RUNNING'"))

    def backends(self) -> list[str]:
        return [r[0] for r in self.sql(BACKENDS)]

    def terminate(self, *patterns: str) -> list[str]:
        """pg_terminate_backend for every backend whose application_name matches a pattern."""
        return [name for name, done in self.sql(TERMINATE, {"patterns": list(patterns)}) if done]

    def resubscriptions(self) -> int:
        return sum(p.log().count("listener re-subscribed") for p in self.harness.processes if p.kind == "worker")

    # --- one round -------------------------------------------------------------------------------

    def round(self, name: str, description: str, inject: Callable[[FaultReport], None]) -> FaultReport:
        """Run one fault as described in the module docstring; raises AssertionError with every
        problem the checks found."""
        report = FaultReport(name, description)
        resubscribed_before = self.resubscriptions()
        self.submit_batch(name)
        self.wait(lambda: self.running() >= min(8, WORKERS * CONCURRENCY), "work in flight", timeout=60)
        submitter = Submitter(self, name)
        submitter.start()
        time.sleep(0.5)
        try:
            inject(report)
        finally:
            submitter.stop.set()
            submitter.join(120)
        if submitter.failure is not None:
            raise AssertionError(f"the submitter gave up: {submitter.failure!r}")
        report.submitted = BATCH + submitter.submitted
        report.submit_errors, report.replays = submitter.errors, submitter.replays
        report.drain_seconds = self.wait(lambda: self.pending() == 0, f"every task to end after {name}")
        report.pickup_seconds = self.probe(name)
        report.resubscribed = self.resubscriptions() - resubscribed_before
        previous = self.last_verdict.as_dict() if self.last_verdict else {}
        verdict = self.verify()
        report.verdict = verdict.as_dict()
        report.added = {
            name: report.verdict[name] - previous.get(name, 0)
            for name in ("tasks", "attempts", "abandoned", "re_executions", "overlaps_after_lease_expiry")
        }
        self.reports.append(report)
        problems = verdict.problems + self.unexpected_exits()
        slow = [s for s in report.pickup_seconds if s > PICKUP_LIMIT_SECONDS]
        if slow:
            problems.append(
                f"probe pickups took {slow} s (poll interval {POLL_SECONDS} s): a listener is not subscribed"
            )
        if problems:
            raise AssertionError(f"after {name}: {len(problems)} problem(s):\n" + "\n".join(problems[:40]))
        return report

    def probe(self, name: str) -> list[float]:
        """One task per worker slot on its probe queue; the seconds from submit to claim (database time)."""
        ids = []
        for slot in range(len(self.slots)):
            key = f"{name}-probe-{slot}"
            self.keys[key] = "ok"
            ids.append(
                self.sql(
                    SUBMIT,
                    {
                        "task_type": TASK_TYPE,
                        "payload": Jsonb({"ms": 0, "kind": "ok"}),
                        "queue": f"probe_{slot}",
                        "max_attempts": MAX_ATTEMPTS,
                        "key": key,
                    },
                )[0][0]
            )
        self.wait(
            lambda: (
                self.sql_value(
                    "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = ANY(%s)",
                    (ids, list(TERMINAL)),
                )
                == len(ids)
            ),
            "the probes to run",
            timeout=POLL_SECONDS * 2,
        )
        return [self.sql_value(PROBE_LATENCY, {"task_id": task_id}) for task_id in ids]

    def verify(self) -> Verdict:
        alive = {p.pid for p in self.harness.processes if p.kind == "worker" and p.alive()}
        self.sql("SELECT 1")  # reconnect first if needed
        assert self._admin is not None
        verdict = check(self._admin, self.keys, self.run_log, self.killed, alive)
        self.last_verdict = verdict
        return verdict

    # --- the end ---------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        faults: dict[str, int] = {}
        for report in self.reports:
            faults[report.name] = len(report.injected)
        pickups = sorted(s for r in self.reports for s in r.pickup_seconds)
        return {
            "command": "make chaos",
            "server": f"PostgreSQL {self.server.version()} (private, port {self.server.port})",
            "setup": {
                "workers": WORKERS,
                "concurrency": CONCURRENCY,
                "schedulers": SCHEDULERS,
                "lease_seconds": LEASE_SECONDS,
                "poll_seconds": POLL_SECONDS,
                "max_attempts": MAX_ATTEMPTS,
            },
            "faults_injected": sum(faults.values()),
            "rounds": [r.as_dict() for r in self.reports],
            "totals": self.last_verdict.as_dict() if self.last_verdict else {},
            "pickup_ms": {
                "n": len(pickups),
                "median": round(pickups[len(pickups) // 2] * 1000, 1) if pickups else None,
                "max": round(pickups[-1] * 1000, 1) if pickups else None,
            },
            "wall_seconds": round(time.monotonic() - self.started, 1),
        }

    def close(self) -> dict[str, int | None]:
        """Stop every process gracefully (SIGTERM), then the server; return the exit codes."""
        codes = self.harness.stop_all(timeout=30)
        self.close_admin()
        with contextlib.suppress(OSError):
            shutil.copyfile(self.server.log, self.workdir / "server.log")
        self.server.destroy()
        return codes
